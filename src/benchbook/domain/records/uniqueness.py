"""Uniqueness keys (OpenAPI: ``PUT /schemas/{name}/unique-keys``): a key is a list of a schema's own
field ids whose values together must be unique among live siblings under the same parent record
(top-level records: within the collection). A record with a blank in any key field is exempt."""
from __future__ import annotations

import json
from typing import Any

from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session

from benchbook.domain.errors import Conflict
from benchbook.persistence.tables import Field, Record, Schema

_SQL_TYPED = {"string": "as_string", "url": "as_string", "date": "as_string", "datetime": "as_string",
              "reference": "as_string", "file": "as_string", "integer": "as_integer", "float": "as_float",
              "boolean": "as_boolean"}


def _blank(value: Any) -> bool:
    return value is None or value == "" or value == []


def _siblings(record: Record) -> list[ColumnElement[bool]]:
    conds = [Record.schema_id == record.schema_id, Record.deleted_at.is_(None), Record.id != record.id]
    if record.parent_id:
        conds.append(Record.parent_id == record.parent_id)
    else:
        conds += [Record.parent_id.is_(None), Record.dataset_id == record.dataset_id]
    return conds


def clashing_record(session: Session, record: Record, key: list[str], types: dict[str, str]) -> Record | None:
    """A live sibling holding the same values as ``record`` for every field id in ``key``."""
    values = [record.data.get(fid) for fid in key]
    if any(_blank(v) for v in values):
        return None
    conds = _siblings(record)
    loose = []
    for fid, value in zip(key, values):
        accessor = _SQL_TYPED.get(types.get(fid, ""))
        if accessor:
            conds.append(getattr(Record.data[fid], accessor)() == value)
        else:
            loose.append((fid, value))
    for other in session.scalars(select(Record).where(*conds)):
        if all(json.dumps(other.data.get(f), sort_keys=True) == json.dumps(v, sort_keys=True) for f, v in loose):
            return other
    return None


def check_unique(session: Session, record: Record, schema: Schema, fields: list[Field]) -> None:
    """Raise ``Conflict`` naming the clashing record when ``record`` breaks a key of ``schema``."""
    types = {f.id: f.type for f in fields}
    names = {f.id: f.name for f in fields}
    for key in schema.unique_keys:
        other = clashing_record(session, record, key, types)
        if other is not None:
            label = f"{other.natural_name!r} " if other.natural_name else ""
            raise Conflict(f"record {label}({other.id}) already has these values for unique key "
                           f"({', '.join(names.get(k, k) for k in key)})")


def first_violation(session: Session, schema: Schema, key: list[str]) -> str | None:
    """Describe the first pair of live records that break ``key`` (for setting new keys)."""
    seen: dict[str, str] = {}
    for rec in session.scalars(select(Record).where(Record.schema_id == schema.id, Record.deleted_at.is_(None))):
        values = [rec.data.get(fid) for fid in key]
        if any(_blank(v) for v in values):
            continue
        marker = json.dumps([rec.parent_id or rec.dataset_id, values], sort_keys=True)
        if marker in seen:
            return f"records {seen[marker]} and {rec.id} share the same values"
        seen[marker] = rec.id
    return None
