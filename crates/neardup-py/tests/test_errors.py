"""Bad input: Python exceptions with the library's messages, never a crash."""

from __future__ import annotations

import pytest

import neardup


def test_exception_hierarchy():
    assert issubclass(neardup.ConfigError, neardup.NeardupError)
    assert issubclass(neardup.ConfigError, ValueError)
    assert issubclass(neardup.EmptyDocumentError, ValueError)
    assert issubclass(neardup.ConfigMismatchError, neardup.EngineError)


@pytest.mark.parametrize(
    "options,message",
    [
        ({"method": "fuzzy"}, "unknown method `fuzzy`; use auto, simhash, minhash, imatch, exact or short"),
        ({"threshold": 1.5}, "strictly between 0 and 1"),
        ({"method": "simhash", "threshold": 0.5}, "would ignore it"),
        ({"distance": 3}, "would ignore it"),
        ({"method": "simhash", "distance": 70}, "use 0 to 63"),
        ({"method": "simhash", "minhash_char_ngram": 3}, "would ignore them"),
        ({"minhash_word_ngram": 0}, "word_ngram = 0 is out of range"),
        ({"minhash_bits": 12}, "minhash bits = 12 is not supported; use 8, 16 or 32"),
        ({"method": "exact", "minhash_bits": 8}, "would ignore it"),
        ({"method": "minhash", "quote_edge": 0.1}, "would ignore it"),
        ({"quote_edge": 0.7}, "quote edge 0.7 is out of range"),
        ({"method": "minhash", "passages": False}, "would ignore it"),
        ({"linkage": "single"}, 'use "online" or "components"'),
        ({"keep": "last"}, "keep `last`: use first or longest"),
        ({"features": "bigrams"}, "bigrams"),
        ({"top_n": 0}, "positive number"),
        ({"html": "sometimes"}, "use auto, always or never"),
        ({"threads": "many"}, "option `threads`"),
        ({"colour": "blue"}, "unknown option `colour`"),
    ],
)
def test_bad_dedup_options_raise_config_error(options, message):
    with pytest.raises(neardup.ConfigError, match=None) as e:
        neardup.dedup(["some text to dedup"], **options)
    assert message in str(e.value)


def test_bad_documents():
    with pytest.raises(ValueError, match="document 1 has no 'text' field"):
        neardup.dedup([{"text": "a b c"}, {"body": "x"}])
    with pytest.raises(TypeError, match="document 0 is int"):
        neardup.dedup([3])
    with pytest.raises(TypeError, match="expected a str or a sequence of str"):
        neardup.Fingerprinter().simhash(3)
    with pytest.raises(TypeError, match="document 1: expected a str, got int"):
        neardup.Fingerprinter().simhash(("a b c", 5))
    with pytest.raises(neardup.EmptyDocumentError, match="no text left after normalisation"):
        neardup.simhash("  !!! ")
    with pytest.raises(ValueError, match="not valid Unicode"):
        neardup.simhash("lone \ud800 surrogate")
    with pytest.raises(ValueError, match="document 1: the text is not valid Unicode"):
        neardup.Fingerprinter().simhash(["fine text", "lone \ud800 surrogate"])


def test_missing_dictionary_file(tmp_path):
    with pytest.raises(neardup.ConfigError, match="cannot read"):
        neardup.Fingerprinter(features="jieba", idf=str(tmp_path / "missing.txt")).simhash("新闻")
