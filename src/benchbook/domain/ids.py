"""Ids: time-ordered ULIDs (26 Crockford base-32 characters), and "id or prefix" lookup.

DESIGN.md: wherever the spec says "id or prefix", a unique prefix of at least 4 characters
resolves; an ambiguous one is a 422 naming how many candidates match.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session
from ulid import ULID

from benchbook.domain.errors import Invalid, NotFound

ID_LENGTH = 26
MIN_PREFIX = 4


def new_id() -> str:
    """A new time-ordered id (ULID text, 26 characters)."""
    return str(ULID())


def resolve_prefix(session: Session, model: Any, value: str, *, what: str,
                   where: list[ColumnElement[bool]] | None = None) -> str:
    """The full id of the one ``model`` row whose id is ``value`` or starts with it.

    Raises ``NotFound`` when none matches (or the prefix is shorter than 4 characters),
    ``Invalid`` (422) when it matches several rows (the message gives the count).
    """
    value = value.strip().upper()
    conds = list(where or [])
    if len(value) >= ID_LENGTH:
        row = session.scalar(select(model.id).where(model.id == value, *conds))
        if row is None:
            raise NotFound(f"{what} {value} not found")
        return str(row)
    if len(value) < MIN_PREFIX:
        raise NotFound(f"no {what} has id {value!r} (a prefix needs at least {MIN_PREFIX} characters)")
    cond = model.id.startswith(value, autoescape=True)
    ids = session.scalars(select(model.id).where(cond, *conds).limit(2)).all()
    if not ids:
        raise NotFound(f"no {what} id starts with {value}")
    if len(ids) > 1:
        count = session.scalar(select(func.count()).select_from(model).where(cond, *conds))
        raise Invalid(f"{what} id prefix {value} is ambiguous: {count} candidates match")
    return str(ids[0])
