"""The package's public names: what ``from neardup import *`` gives."""

import neardup


def test_public_names_are_the_api_and_nothing_else():
    namespace: dict = {}
    exec("from neardup import *", namespace)
    exported = {k for k in namespace if not k.startswith("__")}
    assert exported == set(neardup.__all__)
    # Typing helpers the module imports for its own signatures are not part of the API.
    assert not exported & {"Any", "Iterable", "Mapping", "Union", "annotations"}
    for name in neardup.__all__:
        assert getattr(neardup, name).__doc__, f"{name} has no docstring"


def _stub_value(name: str):
    """The value assigned to ``name`` in the package's stubs (an AST node)."""
    import ast
    import pathlib

    stub = pathlib.Path(neardup.__file__).with_name("__init__.pyi").read_text(encoding="utf-8")
    for node in ast.parse(stub).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return node.value
    raise AssertionError(f"{name} is not in the stubs")


def _stub_literal(name: str) -> set[str]:
    return {e.value for e in _stub_value(name).slice.elts}  # Literal[...]


def test_stubs_export_what_the_package_exports():
    assert [e.value for e in _stub_value("__all__").elts] == neardup.__all__


def test_stages_returned_are_those_the_stubs_name():
    # A repost with a comment (containment) and a quote of a long text's sentences (passage)
    # broke the stubs' Stage, which named neither.
    post = "今天在公园里看到一只很可爱的小猫，它在阳光下睡觉，样子特别安详。"
    source = "\n".join(
        f"第{i}段：这是一段关于城市交通与公共设施建设的长篇报道，记录了第{i}次调查的详细结果。"
        for i in range(40)
    )
    quote = "据报道：“第7段：这是一段关于城市交通与公共设施建设的长篇报道，记录了第7次调查的详细结果。”"
    texts = [post, "转发：" + post + " 太可爱了哈哈哈", source, quote, source]
    stages = {d.stage for d in neardup.dedup(texts) if d.stage is not None}
    assert {"containment", "passage", "exact"} <= stages, stages
    assert stages <= _stub_literal("Stage")
