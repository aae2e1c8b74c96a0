"""Ids: time-ordered ULIDs (26 Crockford base-32 characters), and "id or prefix" lookup.

DESIGN.md: wherever the spec says "id or prefix", a unique prefix of at least 4 characters
resolves; an ambiguous one is a 422 naming how many candidates match.

A ULID is 10 characters of time then 16 random ones, so ids made in one import share long
prefixes and a short prefix rarely picks one record. The short form shown by the CLI's tables
is the id's random tail, its last :data:`SHORT_TAIL` characters (40 random bits: unique in
practice); a value of 4 to 16 characters resolves when it is the start *or* the end of exactly
one id (issue 14, item 10; docs/decisions.md).
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, func, or_, select
from sqlalchemy.orm import Session
from ulid import ULID

from benchbook.domain.errors import Invalid, NotFound

ID_LENGTH = 26
MIN_PREFIX = 4
RANDOM_LENGTH = 16
SHORT_TAIL = 8
"""Characters of an id's random tail shown as its short form (``benchbook --table``)."""


def short_id(value: str) -> str:
    """The short form of an id: its last :data:`SHORT_TAIL` characters (random, not time)."""
    return value[-SHORT_TAIL:]


def new_id() -> str:
    """A new time-ordered id (ULID text, 26 characters)."""
    return str(ULID())


def resolve_prefix(session: Session, model: Any, value: str, *, what: str,
                   where: list[ColumnElement[bool]] | None = None) -> str:
    """The full id of the one ``model`` row whose id is ``value``, starts with it, or (for 4 to
    16 characters) ends with it (the short form, :func:`short_id`).

    Raises ``NotFound`` when none matches (or the value is shorter than 4 characters),
    ``Invalid`` (422) when several rows match: the message gives the count, a few of them and
    how to pick one.
    """
    value = value.strip().upper()
    conds = list(where or [])
    if len(value) >= ID_LENGTH:
        row = session.scalar(select(model.id).where(model.id == value, *conds))
        if row is None:
            raise NotFound(f"{what} {value} not found")
        return str(row)
    if len(value) < MIN_PREFIX:
        raise NotFound(f"no {what} has id {value!r} (give the whole id, its last {SHORT_TAIL} characters "
                       f"or a prefix of at least {MIN_PREFIX})")
    tests = [model.id.startswith(value, autoescape=True)]
    if len(value) <= RANDOM_LENGTH:
        tests.append(model.id.endswith(value, autoescape=True))
    found: list[str] = []
    for test in tests:  # one query each: the prefix one walks the primary key's index
        found += [i for i in session.scalars(select(model.id).where(test, *conds).limit(2)) if i not in found]
    if not found:
        ends = " or ends" if len(tests) > 1 else ""
        raise NotFound(f"no {what} id starts{ends} with {value}")
    if len(found) > 1:
        cond = or_(*tests) if len(tests) > 1 else tests[0]
        count = session.scalar(select(func.count()).select_from(model).where(cond, *conds)) or len(found)
        examples = ", ".join(str(i) for i in session.scalars(select(model.id).where(cond, *conds).limit(3)))
        raise Invalid(f"{what} id {value} is ambiguous: {count} {what}s match (e.g. {examples}); give the "
                      f"whole id, or its last {SHORT_TAIL} characters (what `benchbook --table` shows), "
                      "or more of its first characters")
    return str(found[0])
