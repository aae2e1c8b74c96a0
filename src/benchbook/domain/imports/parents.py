"""Parents by key instead of by pasted record id (issue 14 *Import* 5).

``--parent-key [COLUMN=][SCHEMA.]FIELD`` (API: ``parent_key``): the column ``COLUMN``
(default: named ``FIELD``) holds, for each row, the parent record's value of the parent
schema's field ``FIELD``; ``natural_name`` and ``id`` may stand for ``FIELD``. ``SCHEMA`` names
the parent schema; it is needed only when the import creates the schema (``--create-schema``),
else the schema's parent is used. The special column ``parent`` finds the parent by id, by
natural name, or by a one-field uniqueness key of the parent schema, in that order.

Parents are live records of the parent schema in the import's collection (a parent must be in
the same collection). A value that no parent has, or that two have, is a problem of the row.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from benchbook.domain.catalog.dtypes import ValueProblem, coerce_value
from benchbook.domain.catalog.lookup import SchemaMeta
from benchbook.domain.errors import Invalid
from benchbook.domain.ids import ID_LENGTH
from benchbook.domain.imports.columns import cell_value
from benchbook.domain.imports.dates import DateRules
from benchbook.persistence.tables import Collection, Field, Record

PSEUDO_FIELDS = ("natural_name", "id")
AUTO = "*"


@dataclass(frozen=True)
class ParentKey:
    """A parsed ``--parent-key``: the ``column`` holding the key, the parent ``schema`` (None:
    the imported schema's parent) and the parent's ``field`` (a field name, ``natural_name``,
    ``id``, or :data:`AUTO` for the ``parent`` column)."""

    column: str
    schema: str | None
    field: str

    @classmethod
    def parse(cls, text: str) -> ParentKey:
        """``[COLUMN=][SCHEMA.]FIELD`` → :class:`ParentKey`; raises ``Invalid`` when FIELD is empty."""
        column, _, rest = text.strip().rpartition("=")
        schema, _, name = rest.strip().rpartition(".")
        name = name.strip()
        if not name:
            raise Invalid(f"parent key {text!r}: expected [COLUMN=][SCHEMA.]FIELD, e.g. 'cultivar.class'")
        return cls(column.strip() or name, schema.strip() or None, name)


def _key(field: Field, stored: Any) -> str:
    if field.type in ("integer", "float") and isinstance(stored, (int, float)):
        stored = float(stored)
    return json.dumps(stored, sort_keys=True)


class ParentIndex:
    """The live records of ``parent`` (a :class:`SchemaMeta`) in ``collection`` by the key
    ``how`` names (a :class:`ParentKey`'s ``field``), loaded with one query."""

    def __init__(self, session: Session, collection: Collection, parent: SchemaMeta, how: str,
                 rules: DateRules) -> None:
        self.parent, self.how, self.rules, self.tz = parent, how, rules, collection.timezone
        self.fields: list[Field] = []
        if how == AUTO:
            self.fields = [parent.by_id[key[0]] for key in parent.schema.unique_keys
                           if len(key) == 1 and key[0] in parent.by_id]
        elif how not in PSEUDO_FIELDS:
            if how not in parent.by_name:
                raise Invalid(f"parent key: schema {parent.schema.name!r} has no field {how!r} "
                              f"(fields: {', '.join(parent.by_name) or 'none'}; or natural_name, id)")
            self.fields = [parent.by_name[how]]
        self.names: dict[str, list[str]] = defaultdict(list)
        self.values: dict[tuple[str, str], list[str]] = defaultdict(list)
        if how == "id":
            return
        rows = session.execute(select(Record.id, Record.natural_name, Record.data).where(
            Record.schema_id == parent.schema.id, Record.dataset_id == collection.id, Record.deleted_at.is_(None)))
        for rid, name, data in rows:
            if name is not None:
                self.names[name.strip()].append(rid)
            for f in self.fields:
                if data.get(f.id) is not None:
                    self.values[(f.id, _key(f, data[f.id]))].append(rid)

    def find(self, cell: Any) -> tuple[str | None, str | None, str]:
        """``(parent id, None, "")`` for a (non-blank) ``cell``, or ``(None, problem, kind)``.
        An id (or a prefix of one) is passed on as it is: the create checks it."""
        schema = self.parent.schema.name
        text = cell.strip() if isinstance(cell, str) else cell
        if self.how == "id":
            return str(text), None, ""
        if self.how in (AUTO, "natural_name") and isinstance(text, str):
            if self.how == AUTO and len(text) == ID_LENGTH and text.isalnum() and text.upper() == text:
                return text, None, ""
            found = self.names.get(text, [])
            if len(found) == 1:
                return found[0], None, ""
            if len(found) > 1:
                return None, f"parent: {len(found)} {schema!r} records are named {text!r}", "parent_ambiguous"
        for f in self.fields:
            try:
                stored = coerce_value(f.type, f.restrictions or {}, cell_value(f, cell, self.rules), tz=self.tz)
            except ValueProblem:
                continue
            found = self.values.get((f.id, _key(f, stored)), [])
            if len(found) == 1:
                return found[0], None, ""
            if len(found) > 1:
                return None, f"parent: {len(found)} {schema!r} records have {f.name} {text!r}", "parent_ambiguous"
        what = ("natural name" if self.how == "natural_name" else
                f"{self.fields[0].name}" if self.how != AUTO else
                "id, natural name" + "".join(f" or {f.name}" for f in self.fields))
        return None, f"parent: no {schema!r} record has {what} {text!r}", "parent_unknown"
