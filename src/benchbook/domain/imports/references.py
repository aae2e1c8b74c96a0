"""Reference columns of an import filled from codes (issue 35 item 1): a cell of a ``reference``
or ``reference_list`` field may hold what a person types for one (the target's id, id prefix
or suffix, one-field uniqueness key value or natural name: ``records.references``), so
``carrier`` = ``UA`` fills a flight's reference to the airline whose key is ``UA``.

Set-based: the rows checked together (``run.CHECK_STEP``) are resolved together, one lookup
per field for the values not met before (``ReferenceResolver`` remembers the answers for the
whole import). A value naming no record, or several, is a problem of its rows, summarised as
ONE problem per column and kind, naming the values with their row counts
(:meth:`ImportReferences.describe`).

``create_missing``: an unknown value becomes a bare record of the target schema, created in the
import's collection before the rows that name it, holding the value in the target's key field
(its first one-field uniqueness key, else the field its display template is made of, e.g.
``{tailnum}``). Only top-level target schemas of the collection whose other fields are not
required get them; the import's result names what it created (:meth:`ImportReferences.created`).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from benchbook.domain.catalog.dtypes import REFERENCE_TYPES, ValueProblem, coerce_value
from benchbook.domain.catalog.lookup import SchemaCache, SchemaMeta
from benchbook.domain.context import Ctx
from benchbook.domain.errors import Invalid, NotFound
from benchbook.domain.records.references import (
    AMBIGUOUS,
    UNKNOWN,
    ReferenceResolver,
    Unresolved,
    resolve_rows,
)
from benchbook.persistence.tables import Collection, Field

REFERENCE_KINDS = (UNKNOWN, AMBIGUOUS)
EXAMPLES = 5
"""Values a summary names (the most frequent first)."""


@dataclass
class _Missing:
    """Bare records to create for one target schema: ``key`` is the field holding the typed value, ``ids`` maps each
    typed value to the new record's id, ``named_by`` the fields whose cells named them."""

    meta: SchemaMeta
    key: Field
    ids: dict[str, str] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    named_by: set[str] = field(default_factory=set)


class ImportReferences:
    """The reference columns of one import into ``collection`` (module docstring). ``ids``:
    where new records' ids come from (the import's stream); ``allowed``: the collection's
    schema names (bare targets are made only of those)."""

    def __init__(self, session: Session, collection: Collection, cache: SchemaCache, *, create_missing: bool,
                 ids: Iterator[str], allowed: set[str]) -> None:
        self.resolver = ReferenceResolver(session, collection, cache)
        self.collection, self.create_missing, self.ids, self.allowed = collection, create_missing, ids, allowed
        self.tally: dict[tuple[str, str], Counter[str]] = {}
        self.targets: dict[str, str] = {}  # field name → target schema name
        self.missing: dict[str, _Missing] = {}  # target schema id → what to create
        self.cannot: dict[str, str] = {}  # target schema name → why no bare records can be made

    def apply(self, meta: SchemaMeta, rows: list[tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]]) -> None:
        """Resolve the references of ``rows`` of schema ``meta``, each ``(stored values by field
        id, given values by field name, problems)``: stored values become ids, the given ones
        follow (the write reads them), problems join the row's."""
        fields = [f for f in meta.fields if f.type in REFERENCE_TYPES]
        if not fields or not rows:
            return
        stored = [row[0] for row in rows]
        problems = resolve_rows(self.resolver, fields, stored, loc=("data",),
                                missing=self._bare if self.create_missing else None)
        for i, (values, given, errors) in enumerate(rows):
            for f in fields:
                if f.name in given:
                    given[f.name] = values.get(f.id)
            for entry in problems.get(i, []):
                name = str(entry["loc"][-1])
                self.tally.setdefault((name, entry["type"]), Counter())[str(entry["input"])] += 1
                target = meta.by_name[name].restrictions.get("schema") if name in meta.by_name else None
                self.targets.setdefault(name, target or "")
                errors.append(entry)

    def _bare(self, f: Field, unresolved: Unresolved) -> str | None:
        """The id of the bare target record to create for an unknown value, or None when none
        can be made (the reason kept for the summary)."""
        meta = self.resolver.target(f)
        if meta is None:
            return None
        plan = self.missing.get(meta.schema.id)
        if plan is None:
            key = self._key_field(meta)
            if key is None:
                return None
            plan = self.missing[meta.schema.id] = _Missing(meta, key)
        text = unresolved.value
        if text not in plan.ids:
            try:
                plan.values[text] = coerce_value(plan.key.type, plan.key.restrictions or {}, text,
                                                 tz=self.collection.timezone)
            except ValueProblem:
                return None
            plan.ids[text] = next(self.ids)
        plan.named_by.add(f.name)
        return plan.ids[text]

    def _key_field(self, meta: SchemaMeta) -> Field | None:
        name = meta.schema.name
        why = None
        keys = self.resolver.key_fields(meta)
        template = (meta.schema.display_template or "").strip()
        named = template[1:-1] if template.startswith("{") and template.endswith("}") else None
        key = keys[0] if keys else meta.by_name.get(named) if named and named.isidentifier() else None
        if meta.parent is not None:
            why = f"{name!r} records have a parent"
        elif name not in self.allowed:
            why = f"collection {self.collection.name!r} is not for schema {name!r}"
        elif key is None or key.deleted_at is not None:
            why = f"{name!r} has no one-field uniqueness key nor a display template of one field"
        elif any(f.required and f.id != key.id and f.default in (None, "", []) for f in meta.fields):
            why = f"{name!r} has other required fields"
        if why:
            self.cannot[name] = why
            return None
        return key

    def describe(self, name: str, kind: str) -> str | None:
        """The one summary of column (field) ``name``'s problems of ``kind`` (a
        :data:`REFERENCE_KINDS`): the values with their row counts, most frequent first."""
        counts = self.tally.get((name, kind))
        if not counts:
            return None
        target = self.targets.get(name) or "such"
        shown = ", ".join(f"{value!r} ({n:,} row{'s' if n != 1 else ''})" for value, n in counts.most_common(EXAMPLES))
        more = f" and {len(counts) - EXAMPLES:,} more" if len(counts) > EXAMPLES else ""
        values = f"{len(counts):,} value{'s' if len(counts) != 1 else ''}"
        if kind == AMBIGUOUS:
            return f"{name}: {values} name several {target!r} records each: {shown}{more}; give their ids"
        how = f"by {', '.join([*self._keys(name), 'natural name'])} or id"
        text = f"{name}: {values} name no {target!r} record within reach ({how}): {shown}{more}"
        if target in self.cannot:
            return f"{text}; create_missing cannot create them: {self.cannot[target]}"
        return f"{text}; create_missing (--create-missing) creates them"

    def _keys(self, name: str) -> list[str]:
        """The names of the key fields a value of field ``name`` was compared with."""
        target = self.targets.get(name)
        try:
            meta = self.resolver.cache.schema_named(target) if target else None
        except NotFound:
            meta = None
        return [f.name for f in self.resolver.key_fields(meta)]

    def write(self, ctx: Ctx, used: set[str]) -> None:
        """Create the bare target records that the rows to write (naming the ids ``used``) name,
        set-based, in the caller's batch. Raises ``Invalid`` when they cannot be created."""
        from benchbook.domain.records.bulk import RowProblems, bulk_create_records

        for plan in self.missing.values():
            wanted = [(text, rid) for text, rid in plan.ids.items() if rid in used]
            if not wanted:
                continue
            bodies = [{"schema_name": plan.meta.schema.name, "data": {plan.key.name: plan.values[text]}}
                      for text, _ in wanted]
            try:
                bulk_create_records(ctx, self.collection.id, bodies, ids=[rid for _, rid in wanted],
                                    cache=self.resolver.cache)
            except RowProblems as exc:
                raise Invalid(f"create_missing: the {plan.meta.schema.name!r} records cannot be created: "
                              f"{exc.problems[0][1]}") from None
            plan.ids = dict(wanted)

    def created(self) -> list[dict[str, Any]]:
        """What ``create_missing`` created (or, in a dry run, would create): per target schema
        ``{schema, field, count, examples, named_by}``."""
        return [{"schema": p.meta.schema.name, "field": p.key.name, "count": len(p.ids),
                 "examples": list(p.ids)[:EXAMPLES], "named_by": sorted(p.named_by)}
                for p in self.missing.values() if p.ids]

