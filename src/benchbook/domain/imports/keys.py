"""Upsert keys (issue 14 *Import* 6): ``--key FIELD[,FIELD]`` matches rows to the live records
of the schema in the collection holding the same values for those fields (compared as stored:
``"1"`` and ``1.0`` match an integer ``1``). A matched row updates its record, any other row
creates one. A row whose key has a blank, whose key two records share, or whose key an earlier
row of the file already had, is a problem of that row.
"""
from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from benchbook.domain.catalog.lookup import SchemaMeta
from benchbook.domain.errors import Invalid
from benchbook.persistence.tables import Collection, Field, Record


def _norm(field: Field, stored: Any) -> Any:
    return float(stored) if field.type in ("integer", "float") and isinstance(stored, (int, float)) else stored


class KeyIndex:
    """The live records of ``meta``'s schema in ``collection`` by their values of the fields
    ``names`` (one query). Raises ``Invalid`` when a name is not a field of the schema."""

    def __init__(self, session: Session, collection: Collection, meta: SchemaMeta, names: list[str],
                 unit: str = "line") -> None:
        missing = [n for n in names if n not in meta.by_name]
        if missing:
            raise Invalid(f"key: schema {meta.schema.name!r} has no field {', '.join(map(repr, missing))} "
                          f"(fields: {', '.join(meta.by_name) or 'none'})")
        self.fields = [meta.by_name[n] for n in names]
        self.unit = unit
        self.records: dict[str, dict[str, Any]] = {}
        self.parents: dict[str, str | None] = {}
        self.by_key: dict[str, list[str]] = defaultdict(list)
        self.in_file: dict[str, int] = {}
        rows = session.execute(select(Record.id, Record.parent_id, Record.data).where(
            Record.schema_id == meta.schema.id, Record.dataset_id == collection.id, Record.deleted_at.is_(None)))
        for rid, parent_id, data in rows:
            self.records[rid] = data
            self.parents[rid] = parent_id
            key = self.key({f.id: data.get(f.id) for f in self.fields})
            if key is not None:
                self.by_key[key].append(rid)

    def key(self, stored: dict[str, Any]) -> str | None:
        """The key of stored values by field id; None when a key field is blank."""
        values = [stored.get(f.id) for f in self.fields]
        if any(v is None or v == "" or v == [] for v in values):
            return None
        return json.dumps([_norm(f, v) for f, v in zip(self.fields, values)], sort_keys=True)

    def match(self, number: int, stored: dict[str, Any]) -> tuple[str | None, str | None, str]:
        """For row ``number`` with key values ``stored`` (field id → stored value): ``(record id
        or None to create, None, "")``, or ``(None, problem, kind)``."""
        names = ", ".join(f.name for f in self.fields)
        key = self.key(stored)
        if key is None:
            blanks = [f.name for f in self.fields if stored.get(f.id) in (None, "", [])]
            return None, f"key: {', '.join(blanks)} has no value", "key_missing"
        if key in self.in_file:
            return None, f"key: the same {names} as {self.unit} {self.in_file[key]}", "key_repeated"
        self.in_file[key] = number
        found = self.by_key.get(key, [])
        if len(found) > 1:
            return None, f"key: {len(found)} records have this {names}", "key_ambiguous"
        return (found[0] if found else None), None, ""
