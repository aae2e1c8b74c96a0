"""References shown by name (issue 35 item 2): a reference or reference_list value is a target
record's id; wherever a person reads one (a natural name's template, a CLI table, an export) it
is shown by the target's **label**, its natural name. A target without a natural name is shown
by its id.

This module only reads: the names of targets (:func:`target_names`, one query per 500 ids) and
which of a schema's template placeholders are reference fields (:func:`reference_placeholders`).
Names that follow a renamed target are :mod:`benchbook.domain.records.names`' work.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from benchbook.domain.catalog.dtypes import REFERENCE_TYPES
from benchbook.domain.catalog.lookup import SchemaCache, SchemaMeta
from benchbook.domain.catalog.naming import placeholders
from benchbook.persistence.tables import Field, Record

CHUNK = 500


def reference_placeholders(meta: SchemaMeta) -> list[Field]:
    """The own reference / reference_list fields that ``meta``'s display template names, in
    schema order; empty without a template."""
    template = meta.schema.display_template
    if not template:
        return []
    used = set(placeholders(template))
    return [f for f in meta.fields if f.type in REFERENCE_TYPES and f.name in used]


def targets(value: Any) -> list[str]:
    """The target ids a stored reference (a string) or reference_list (a list) value holds."""
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def target_names(session: Session, ids: Iterable[str]) -> dict[str, str | None]:
    """``{id: natural_name}`` of the records ``ids`` (live or deleted; an id no record has is
    left out), one query per :data:`CHUNK` ids. Reads through the session, so names changed
    earlier in the transaction are seen."""
    ordered = sorted(set(ids))
    out: dict[str, str | None] = {}
    for start in range(0, len(ordered), CHUNK):
        out.update((rid, name) for rid, name in session.execute(
            select(Record.id, Record.natural_name).where(Record.id.in_(ordered[start:start + CHUNK]))))
    return out


def template_labels(session: Session, cache: SchemaCache, records: Sequence[Any]) -> dict[str, str | None]:
    """The names of the targets that the display templates of ``records`` (anything with
    ``schema_id`` and ``data`` keyed by field id) show: ``{target id: natural_name}``, as
    :func:`benchbook.domain.records.rows.record_name` takes them. No query when no template
    names a reference field."""
    wanted: set[str] = set()
    for rec in records:
        for f in reference_placeholders(cache.meta(rec.schema_id)):
            wanted.update(targets(rec.data.get(f.id)))
    return target_names(session, wanted) if wanted else {}


def shown(value: Any, labels: Mapping[str, str | None]) -> Any:
    """A reference value as a person reads it: each target id replaced by its label (its
    natural name), or kept when the target has none or is not in ``labels``. A list stays a
    list; None stays None."""
    if value is None:
        return None
    if isinstance(value, list):
        return [labels.get(str(v)) or v for v in value]
    return labels.get(str(value)) or value
