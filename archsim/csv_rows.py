"""Rows of dicts as CSV text, byte for byte as ``pandas.DataFrame(rows).to_csv(index=False)``.

``archsim run`` writes ``results.csv`` with this instead of pandas: importing pandas is about
0.5 s of a 2-3 s run. Columns appear in the order their keys first appear; a key missing from a
row, ``None`` and NaN are empty cells. Each column is typed as pandas infers it: all integers
stay integers, integers mixed with floats or gaps become floats (``5.0``), booleans with gaps or
mixed with other types are written as objects. A column holding anything else (lists, dicts,
other objects) is left to pandas, so the text never differs.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

__all__ = ["frame_records", "rows_to_csv"]

_INT64 = (-(2**63), 2**63 - 1)


def _kind(value: Any) -> str:
    """``na``, ``bool``, ``int``, ``float``, ``str`` or ``other`` (what pandas would infer)."""
    if value is None:
        return "na"
    if isinstance(value, bool | np.bool_):
        return "bool"
    if isinstance(value, int | np.integer):
        return "int" if _INT64[0] <= int(value) <= _INT64[1] else "other"
    if isinstance(value, float | np.floating):
        return "na" if math.isnan(value) else "float"
    if isinstance(value, str):
        return "str"
    return "other"


def _column(values: list[Any]) -> list[str] | None:
    """One column's cells as pandas writes them; None when pandas must write it."""
    kinds = [_kind(v) for v in values]
    seen = set(kinds) - {"na"}
    if "other" in seen:
        return None
    gaps = "na" in kinds
    if not seen:
        return ["" for _ in values]
    if seen == {"int"} and not gaps:
        return [str(int(v)) for v in values]
    if seen <= {"int", "float"}:  # float64: integers as 5.0, gaps empty
        return ["" if k == "na" else repr(float(v)) for v, k in zip(values, kinds, strict=True)]
    if seen == {"bool"} and not gaps:
        return [str(bool(v)) for v in values]
    # object column: each value as str(), gaps empty
    return [
        "" if k == "na" else str(bool(v)) if k == "bool" else str(int(v)) if k == "int" else str(v)
        for v, k in zip(values, kinds, strict=True)
    ]


def rows_to_csv(rows: Iterable[Mapping[str, Any]]) -> str:
    """CSV text of ``rows`` (one per line, a header first), as pandas would write them."""
    rows = list(rows)
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row))
    gap = object()
    columns = []
    for name in names:
        cells = _column([None if (v := r.get(name, gap)) is gap else v for r in rows])
        if cells is None:
            import pandas as pd  # a column of lists, dicts or other objects

            return pd.DataFrame(rows).to_csv(index=False, lineterminator="\n")
        columns.append(cells)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(list(names))
    writer.writerows(zip(*columns, strict=True) if columns else [])
    return buf.getvalue()


def frame_records(rows: Iterable[Mapping[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
    """(columns, records) of ``pandas.DataFrame(rows).to_dict(orient="records")`` without
    pandas (``archsim run`` prints its table and draws its report from these): columns in
    first-seen order, a missing cell NaN, a numeric column with a gap or a float all floats,
    integers, floats and bools as Python numbers."""
    rows = list(rows)
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    records: list[dict[str, Any]] = [{} for _ in rows]
    nan = float("nan")
    for col in columns:
        values = [row.get(col) for row in rows]
        kinds = {_kind(v) for v in values}
        if kinds <= {"int", "float", "na"} and kinds & {"float", "na"} and kinds != {"na"}:
            values = [nan if v is None else float(v) for v in values]
        elif kinds == {"int"}:
            values = [int(v) for v in values]
        elif kinds == {"float"}:
            values = [float(v) for v in values]
        elif kinds == {"bool"}:
            values = [bool(v) for v in values]
        else:
            values = [nan if v is None else v for v in values]
        for rec, v in zip(records, values, strict=True):
            rec[col] = v
    return list(columns), records
