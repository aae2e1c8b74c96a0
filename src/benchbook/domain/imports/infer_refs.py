"""Reference columns found by ``--create-schema`` (issue 35 item 5): a column whose values each
name one record of an existing schema within reach of the collection (its own schemas' records
and the global collections'), by the target's one-field uniqueness key or natural name
(``records.references``), is proposed as a reference to that schema: ``carrier`` of a flights
file whose codes are all airlines' keys. ``references=auto`` (``--references auto``) makes it a
``reference`` field; otherwise the import notes the proposal and keeps the inferred type. A
column whose values all but a few name records of a schema (the planes a flights file names,
a few of which the planes file lacks) is noted, and made a reference with ``auto`` when
``create_missing`` creates the records it lacks.

Only text and integer columns with repeated values are tried (a column whose values are all
different is the file's own key, like the planes file's ``tailnum``), of at most
:data:`MAX_DISTINCT` distinct values, against each schema in reach: one lookup per 500 distinct
values and schema, stopping at the first schema that does not have them all.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from benchbook.domain.catalog.lookup import SchemaCache, collection_schemas
from benchbook.domain.imports.infer import InferredField, missing_marker
from benchbook.domain.records.references import UNKNOWN, ReferenceResolver, Unresolved, whole_id
from benchbook.persistence.tables import Collection, CollectionSchema, Field, Schema

MAX_DISTINCT = 20_000
"""Columns with more distinct values than this are not tried."""
NEAR_MISS = 50
"""At most this many values (and a tenth of a column's) may name no record for the column to be
noted as nearly a reference (``create_missing`` makes the records it lacks)."""


def _schemas_in_reach(session: Session, collection: Collection | None) -> list[str]:
    """Names of the schemas of ``collection`` and of every live global collection."""
    names = [name for _, name in collection_schemas(session, collection.id)] if collection else []
    rows = session.execute(select(Schema.name).join(CollectionSchema, CollectionSchema.schema_id == Schema.id)
                           .join(Collection, Collection.id == CollectionSchema.collection_id)
                           .where(Collection.scope == "global", Collection.deleted_at.is_(None),
                                  Schema.deleted_at.is_(None)))
    return list(dict.fromkeys([*names, *rows.scalars()]))


def propose_references(session: Session, collection: Collection | None, inferred: list[InferredField],
                       values: dict[str, list[Any]], *, apply: bool, create_missing: bool = False) -> list[str]:
    """Set :attr:`InferredField.reference` of each column of ``inferred`` whose ``values`` (its
    non-blank cells) all name a record of one schema in reach; with ``apply`` make it a
    reference field of that schema. A column of which all but a few values (at most
    :data:`NEAR_MISS` of them) name records of a schema is noted, and with ``apply`` and
    ``create_missing`` made a reference too (the import then creates the records it lacks).
    Returns a note per proposal, for the import to show."""
    schemas = _schemas_in_reach(session, collection)
    if not schemas:
        return []
    resolver = ReferenceResolver(session, collection, SchemaCache(session))
    notes = []
    for f in inferred:
        if f.unique or f.type not in ("string", "integer"):
            continue
        distinct = {str(v).strip() for v in values.get(f.column, []) if not missing_marker(v, "reference")}
        if not distinct or len(distinct) > MAX_DISTINCT or any(whole_id(v) for v in distinct):
            continue
        found = _target(resolver, f, distinct, schemas)
        if found is None:
            continue
        name, unknown = found
        count = f"{len(distinct):,} values"
        if unknown and not (apply and create_missing):
            shown = ", ".join(map(repr, unknown[:3])) + (", …" if len(unknown) > 3 else "")
            notes.append(f"column {f.column!r}: all but {len(unknown)} of its {count} ({shown}) name one {name!r} "
                         "record each; references=auto with create_missing makes it a reference field and creates "
                         "the others")
            continue
        f.reference = name
        if apply:
            f.type, f.restrictions = "reference", {"schema": name}
            notes.append(f"column {f.column!r}: a reference to {name!r} (each of its {count} names one {name!r} "
                         "record" + (f"; {len(unknown)} to be created)" if unknown else ")"))
        else:
            notes.append(f"column {f.column!r}: each of its {count} names one {name!r} record; references=auto "
                         "(--references auto) makes it a reference field")
    return notes


def _target(resolver: ReferenceResolver, f: InferredField, distinct: set[str],
            schemas: list[str]) -> tuple[str, list[str]] | None:
    """The first schema of ``schemas`` whose records ``distinct`` name, each one record, with
    the values naming none (sorted; at most :data:`NEAR_MISS` and a tenth of them); a schema
    they all name wins over one they nearly name. None when there is neither."""
    near: tuple[str, list[str]] | None = None
    for name in schemas:
        probe = Field(name=f.name, type="reference", restrictions={"schema": name})
        answers = resolver.resolve(probe, distinct)
        missed = sorted(v for v, a in answers.items() if isinstance(a, Unresolved))
        if not missed:
            return name, []
        if (near is None and len(missed) <= min(NEAR_MISS, len(distinct) // 10)
                and all(getattr(answers[v], "kind", None) == UNKNOWN for v in missed)):
            near = (name, missed)
    return near
