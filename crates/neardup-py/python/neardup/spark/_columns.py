"""The columns of :func:`neardup.spark.dedup`: the ones it adds, its internal ones, and the checks
of the input's (names and types on the driver; nulls and repeats in the job that sketches)."""

from __future__ import annotations

from typing import Optional

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

#: The columns :func:`neardup.spark.dedup` adds.
OUTPUT_COLUMNS = ("duplicate_of", "cluster", "keep", "matched", "similarity", "empty")

# Internal column names (never visible in the result).
_POS, _ID, _TEXT = "__nd_pos", "__nd_id", "__nd_text"
_SIG, _KEYS, _VALID, _CHARS = "__nd_sig", "__nd_keys", "__nd_valid", "__nd_chars"
_NULL = "__nd_null"

_ORDERABLE = (T.IntegralType, T.StringType, T.DecimalType, T.DateType, T.TimestampType)


def _column_type(df: DataFrame, name: str, role: str, keyword: str) -> T.DataType:
    fields = {f.name: f.dataType for f in df.schema.fields}
    if name not in fields:
        raise ValueError(
            f"{role} column {name!r} is not in the DataFrame (columns: {', '.join(df.columns)}); "
            f"pass {keyword}= naming the {role} column"
        )
    return fields[name]


def _check_columns(
    df: DataFrame, text_col: str, id_col: str, position_col: Optional[str]
) -> tuple[T.DataType, T.DataType]:
    if not isinstance(df, DataFrame):
        raise TypeError(f"dedup takes a pyspark.sql.DataFrame, not {type(df).__name__}")
    text_type = _column_type(df, text_col, "text", "text_col")
    if not isinstance(text_type, T.StringType):
        raise TypeError(
            f"text column {text_col!r} is {text_type.simpleString()}, not string; cast it "
            f"(F.col({text_col!r}).cast('string')) or pass text_col= naming a string column"
        )
    id_type = _column_type(df, id_col, "id", "id_col")
    if not isinstance(id_type, _ORDERABLE):
        raise TypeError(
            f"id column {id_col!r} is {id_type.simpleString()}; ids must be integers, strings, "
            f"decimals, dates or timestamps: cast it or pass id_col= naming such a column"
        )
    pos_type: T.DataType = id_type
    if position_col is not None:
        pos_type = _column_type(df, position_col, "position", "position_col")
        if not isinstance(pos_type, _ORDERABLE):
            raise TypeError(
                f"position column {position_col!r} is {pos_type.simpleString()}; positions must "
                f"be integers (e.g. the 0-based input line), strings, decimals, dates or timestamps"
            )
    taken = [c for c in OUTPUT_COLUMNS if c in df.columns]
    if taken:
        raise ValueError(
            f"the DataFrame already has column(s) {', '.join(map(repr, taken))}, which dedup adds; "
            f"rename or drop them first"
        )
    return id_type, pos_type


def _null_texts(text_col: str, count: int) -> ValueError:
    return ValueError(
        f"text column {text_col!r} has {count} null value(s); fill them "
        f"(F.coalesce(F.col({text_col!r}), F.lit(''))) or drop those rows"
    )


def _check_sketches(sketches: DataFrame, text_col: str, id_col: str, position_col: Optional[str]) -> tuple[int, int]:
    """One job over the sketch stage's table, which it computes and caches: no null id,
    position or text, and unique positions. Returns the number of rows and of empty texts
    (nothing left after normalisation)."""

    def total(c: Column) -> Column:
        return F.sum(c.cast("long"))

    per = sketches.groupBy(_POS).agg(
        F.count(F.lit(1)).alias("n"),
        total(F.col(_ID).isNull()).alias("id_nulls"),
        total(F.col(_NULL)).alias("text_nulls"),
        total(~F.col(_VALID)).alias("empty"),
    )
    row = per.agg(
        F.coalesce(F.sum("n"), F.lit(0)).alias("rows"),
        F.coalesce(F.sum("id_nulls"), F.lit(0)).alias("id_nulls"),
        F.coalesce(F.sum(F.when(F.col(_POS).isNull(), F.col("n"))), F.lit(0)).alias("pos_nulls"),
        F.max(F.when(F.col(_POS).isNotNull() & (F.col("n") > 1), F.struct("n", _POS))).alias("dup"),
        F.coalesce(F.sum("text_nulls"), F.lit(0)).alias("text_nulls"),
        F.coalesce(F.sum("empty"), F.lit(0)).alias("empty"),
    ).collect()[0]
    if row["id_nulls"]:
        raise ValueError(
            f"id column {id_col!r} has {row['id_nulls']} null value(s); every document needs an id: "
            f"fill them or drop those rows"
        )
    if position_col is not None and row["pos_nulls"]:
        raise ValueError(
            f"position column {position_col!r} has {row['pos_nulls']} null value(s); every "
            f"document needs a position (e.g. its 0-based input line)"
        )
    if row["dup"] is not None:
        n, value = row["dup"]
        if position_col is None:
            raise ValueError(
                f"id column {id_col!r} is not unique ({value!r} appears {n} times); without "
                f"position_col the ids order the documents, so they must be unique: pass "
                f"position_col= naming a unique column (e.g. the 0-based input line)"
            )
        raise ValueError(
            f"position column {position_col!r} is not unique ({value!r} appears {n} times); "
            f"positions order the documents and must be unique"
        )
    if row["text_nulls"]:
        raise _null_texts(text_col, int(row["text_nulls"]))
    return int(row["rows"]), int(row["empty"])
