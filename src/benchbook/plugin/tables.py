"""``table`` values: pandas DataFrames ⇄ the table envelope (``#/$defs/table``).

Decoding (inputs) maps the wire dtypes to pandas dtypes:

============  ==========================================================================
``integer``   ``Int64`` (nullable; null → ``<NA>``)
``float``     ``float64`` (null → ``NaN``)
``string``    ``string`` (``StringDtype``, null → ``<NA>``)
``boolean``   ``boolean`` (nullable)
``date``      ``object`` column of ``datetime.date`` (null → ``None``); not ``datetime64``, so a
              date column stays a date column when it is sent back
``datetime``  ``datetime64[us, UTC]`` (values must carry an offset; converted to UTC)
(none)        a column without a dtype is left to pandas' own inference
============  ==========================================================================

Encoding (outputs) infers the dtype of each column: bool/``boolean`` → ``boolean``; any
integer dtype → ``integer``; any float dtype → ``float`` (``NaN`` → null, infinities refused);
``string``/``str`` → ``string``; tz-aware ``datetime64`` → ``datetime`` (ISO 8601 with the
column's offset); categoricals by their values; ``object`` columns by their non-null values
(all ``bool``, all integers, all numbers, all ``str``, all aware ``datetime`` or all
``datetime.date``; an all-null column keeps the dtype it arrived with — kept in
``frame.attrs["benchbook.dtypes"]`` — or else is ``string``). Naive ``datetime64`` columns are refused
(say what they are: ``.dt.tz_localize("UTC")`` for datetimes, ``.dt.date`` for dates), as are
mixed object columns, timedeltas and other dtypes, non-string or duplicate column labels. The
index is not sent (``reset_index()`` to keep it). Up to ``TABLE_INLINE_ROWS`` rows go inline;
longer tables are written to an NDJSON file in the scratch folder (header line
``{"columns", "dtypes"}``, then one row object per line). pandas is imported on first use
only, so plugins without tables start faster.
"""
from __future__ import annotations

import datetime as dt
import json
import math
import numbers
import os
import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchbook.plugin.errors import SDKError
from benchbook.plugin.wire import TABLE_INLINE_ROWS, schema_problems

if TYPE_CHECKING:
    import pandas as pd

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


DTYPES_ATTR = "benchbook.dtypes"
"""``DataFrame.attrs`` key holding the wire dtypes a decoded table arrived with; used when an
output column's dtype cannot be told from its values (an all-null ``object`` column)."""


class BadValue(SDKError, ValueError):
    """A value (from the wire or from plugin code) does not fit its declared type or the
    envelope format; the message says which and where."""


def resolve_path(path: str, scratch: Path | None) -> Path:
    """An envelope's ``path``: absolute as given, relative ones under the scratch folder."""
    candidate = Path(path)
    if not candidate.is_absolute() and scratch is not None:
        candidate = scratch / candidate
    return candidate


def parse_date(value: object) -> dt.date:
    """A ``YYYY-MM-DD`` string as a ``datetime.date``; ``ValueError`` otherwise."""
    if not isinstance(value, str) or not _DATE.match(value):
        raise BadValue(f"expected a date as YYYY-MM-DD, got {value!r}")
    try:
        return dt.date.fromisoformat(value)
    except ValueError as exc:
        raise BadValue(f"{value!r} is not a date: {exc}") from None


def parse_datetime(value: object) -> dt.datetime:
    """An ISO 8601 datetime string with an offset (``Z`` allowed) as an aware ``datetime``;
    ``ValueError`` when it is not one or has no offset."""
    if not isinstance(value, str):
        raise BadValue(f"expected an ISO 8601 datetime string, got {value!r}")
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        raise BadValue(f"expected an ISO 8601 datetime, got {value!r}") from None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise BadValue(f"datetime {value!r} has no offset")
    return parsed


def _integer(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise BadValue(f"expected an integer, got {value!r}")
    if isinstance(value, numbers.Integral):
        return int(value)
    number = float(value)
    if math.isfinite(number) and number.is_integer():
        return int(number)
    raise BadValue(f"expected an integer, got {value!r}")


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise BadValue(f"expected a number, got {value!r}")
    return float(value)


def _string(value: object) -> str:
    if not isinstance(value, str):
        raise BadValue(f"expected a string, got {value!r}")
    return value


def _boolean(value: object) -> bool:
    if not isinstance(value, bool):
        raise BadValue(f"expected true or false, got {value!r}")
    return value


_PARSERS: dict[str, Any] = {
    "integer": _integer,
    "float": _number,
    "string": _string,
    "boolean": _boolean,
    "date": parse_date,
    "datetime": parse_datetime,
}


def _column(name: str, dtype: str | None, values: list[Any]) -> pd.Series:
    import pandas as pd

    if dtype is None:
        return pd.Series(values, name=name)
    parse = _PARSERS[dtype]
    parsed: list[Any] = []
    for row, value in enumerate(values):
        try:
            parsed.append(None if value is None else parse(value))
        except ValueError as exc:
            raise BadValue(f"column {name!r}, row {row}: {exc}") from None
    if dtype == "integer":
        return pd.Series(pd.array(parsed, dtype="Int64"), name=name)
    if dtype == "float":
        return pd.Series([math.nan if v is None else v for v in parsed], dtype="float64", name=name)
    if dtype == "string":
        return pd.Series(parsed, dtype="string", name=name)
    if dtype == "boolean":
        return pd.Series(pd.array(parsed, dtype="boolean"), name=name)
    if dtype == "date":
        return pd.Series(parsed, dtype=object, name=name)
    return pd.Series(pd.to_datetime(pd.Series(parsed, dtype=object), utc=True).dt.as_unit("us"), name=name)


def _frame(columns: list[str], dtypes: dict[str, str], data: dict[str, list[Any]]) -> pd.DataFrame:
    import pandas as pd

    series = {name: _column(name, dtypes.get(name), data[name]) for name in columns}
    frame = pd.DataFrame(series, columns=columns)
    frame.attrs[DTYPES_ATTR] = dict(dtypes)
    return frame


def _checked(definition: str, value: object, what: str) -> dict[str, Any]:
    problems = schema_problems(definition, value)
    if problems:
        raise BadValue(f"not a valid {what}: " + "; ".join(problems))
    assert isinstance(value, dict)
    return value


def envelope_to_dataframe(envelope: object, scratch: Path | None = None) -> pd.DataFrame:
    """A table envelope (inline or ``ndjson_path``) as a DataFrame, dtypes mapped as in the
    module docstring. A relative ``path`` is read from ``scratch``. Raises ``ValueError``
    (message says which column/row/line) for an envelope or file that breaks the format."""
    env = _checked("table", envelope, "table envelope")
    if env["encoding"] == "inline":
        columns: list[str] = env["columns"]
        data: dict[str, list[Any]] = env["data"]
        if set(data) != set(columns):
            raise BadValue(f"table data has columns {sorted(data)} but columns lists {columns}")
        lengths = {len(values) for values in data.values()}
        if len(lengths) > 1:
            raise BadValue(f"table columns differ in length: {sorted(lengths)}")
        return _frame(columns, env["dtypes"], data)
    return _read_ndjson(resolve_path(env["path"], scratch))


def _read_ndjson(path: Path) -> pd.DataFrame:
    try:
        with path.open("rb") as handle:
            header_line = handle.readline()
            if not header_line.strip():
                raise BadValue(f"table file {path} has no header line")
            header = _checked("ndjson_header", json.loads(header_line), f"table header in {path}")
            columns: list[str] = header["columns"]
            known = set(columns)
            data: dict[str, list[Any]] = {name: [] for name in columns}
            for number, line in enumerate(handle, start=2):
                if not line.strip():
                    continue
                row = json.loads(line)
                if not isinstance(row, dict):
                    raise BadValue(f"table file {path}, line {number}: a row must be a JSON object")
                unknown = set(row) - known
                if unknown:
                    raise BadValue(f"table file {path}, line {number}: unknown columns {sorted(unknown)}")
                for name in columns:
                    data[name].append(row.get(name))
    except OSError as exc:
        raise BadValue(f"cannot read table file {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise BadValue(f"table file {path} is not NDJSON: {exc}") from None
    return _frame(columns, header["dtypes"], data)


def _object_dtype(name: str, values: list[Any], hint: object) -> str:
    kinds: set[str] = set()
    for value in values:
        if isinstance(value, bool) or type(value).__name__ == "bool_":
            kinds.add("boolean")
        elif isinstance(value, numbers.Integral):
            kinds.add("integer")
        elif isinstance(value, numbers.Real):
            kinds.add("float")
        elif isinstance(value, str):
            kinds.add("string")
        elif isinstance(value, dt.datetime):
            if value.tzinfo is None or value.utcoffset() is None:
                raise BadValue(f"column {name!r} holds naive datetimes: give them a timezone")
            kinds.add("datetime")
        elif isinstance(value, dt.date):
            kinds.add("date")
        else:
            kinds.add(type(value).__name__)
    if not kinds:
        return hint if isinstance(hint, str) and hint in _PARSERS else "string"
    if len(kinds) == 1:
        (kind,) = kinds
        if kind in _PARSERS:
            return kind
    if kinds == {"integer", "float"}:
        return "float"
    raise BadValue(f"column {name!r} holds values of types {sorted(kinds)}: one scalar type per column")


def infer_dtype(name: str, series: pd.Series, hint: object = None) -> str:
    """The wire dtype of one DataFrame column (rules in the module docstring; ``hint``, the
    dtype the column arrived with, decides for an all-null ``object`` column); ``ValueError``
    for a column that has none."""
    import pandas as pd
    from pandas.api import types

    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        series = series.astype(object)
        dtype = series.dtype
    if types.is_bool_dtype(dtype):
        return "boolean"
    if types.is_integer_dtype(dtype):
        return "integer"
    if types.is_float_dtype(dtype):
        return "float"
    if isinstance(dtype, pd.StringDtype):
        return "string"
    if isinstance(dtype, pd.DatetimeTZDtype):
        return "datetime"
    if types.is_datetime64_dtype(dtype):
        raise BadValue(
            f"column {name!r} is a naive datetime64 column: use .dt.tz_localize(...) for datetimes "
            "or .dt.date for dates"
        )
    if dtype == object:
        return _object_dtype(name, series[series.notna()].tolist(), hint)
    raise BadValue(f"column {name!r} has dtype {dtype}, which no table dtype matches")


def _json_values(name: str, series: pd.Series, dtype: str) -> list[Any]:
    missing = series.isna().tolist()
    values = series.astype(object).tolist()
    out: list[Any] = []
    for is_missing, value in zip(missing, values, strict=True):
        if is_missing:
            out.append(None)
        elif dtype == "integer":
            out.append(int(value))
        elif dtype == "float":
            number = float(value)
            if not math.isfinite(number):
                raise BadValue(f"column {name!r} holds {number}, which JSON cannot carry")
            out.append(number)
        elif dtype == "string":
            out.append(str(value))
        elif dtype == "boolean":
            out.append(bool(value))
        else:
            out.append(value.isoformat())
    return out


def dataframe_to_envelope(frame: pd.DataFrame, scratch: Path, *, stem: str = "table") -> dict[str, Any]:
    """A DataFrame as a table envelope: inline up to ``TABLE_INLINE_ROWS`` rows, else an
    ``ndjson_path`` file created in ``scratch`` (its name starts with ``stem``). Raises
    ``ValueError`` for columns the module docstring says are refused, ``OSError`` when the file
    cannot be written."""
    columns = list(frame.columns)
    for label in columns:
        if not isinstance(label, str):
            raise BadValue(f"column labels must be strings, got {label!r}")
    if len(set(columns)) != len(columns):
        raise BadValue(f"column labels must be unique, got {columns}")
    hints = frame.attrs.get(DTYPES_ATTR)
    hints = hints if isinstance(hints, dict) else {}
    dtypes = {name: infer_dtype(name, frame[name], hints.get(name)) for name in columns}
    data = {name: _json_values(name, frame[name], dtypes[name]) for name in columns}
    rows = len(frame)
    if rows <= TABLE_INLINE_ROWS:
        return {"encoding": "inline", "columns": columns, "dtypes": dtypes, "data": data}
    scratch.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=scratch, prefix=f"{stem}-", suffix=".ndjson")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(json.dumps({"columns": columns, "dtypes": dtypes}, ensure_ascii=False) + "\n")
        for index in range(rows):
            row = {column: data[column][index] for column in columns}
            handle.write(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n")
    return {"encoding": "ndjson_path", "path": str(Path(name).resolve())}
