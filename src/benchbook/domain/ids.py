"""Ids: time-ordered ULIDs (26 Crockford base-32 characters), and "id or prefix" lookup.

Wherever the API takes an "id or prefix", a unique prefix of at least 4 characters resolves; an
ambiguous one is a 422 naming how many candidates match (docs/decisions.md *API choices*).

A ULID is 10 characters of time then 16 random ones, so ids made in one import share long
prefixes and a short prefix rarely picks one record. The short form shown by the CLI's tables
is the id's random tail, its last :data:`SHORT_TAIL` characters (40 random bits: unique in
practice); a value of 4 to 16 characters resolves when it is the start *or* the end of exactly
one id (issue 14, item 10; docs/decisions.md).

python-ulid makes every id (its process-wide generator: the time, 80 random bits from the
system's secure source, monotonic within a millisecond under a lock). A bulk write's ids
(:func:`new_ids`) have their text written by numpy for all of them at once: python-ulid's
``str`` takes 1.7 µs an id, the text alone was half of the 8 % that ids took of a large import
(docs/performance.md, *Ids in bulk, rows bound, numeric text read straight*).
"""
from __future__ import annotations

from collections.abc import Iterator
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


_CROCKFORD = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_BITS = 5
_FEW = 32
"""Below this many ids :func:`new_ids` writes each with python-ulid (numpy's fixed cost
outweighs it)."""


def new_ids(count: int) -> list[str]:
    """``count`` new ids (as :func:`new_id`), each later than the one before (python-ulid is
    monotonic within a millisecond), for the rows of one bulk write."""
    if count < _FEW:
        return [new_id() for _ in range(count)]
    return _texts([ULID() for _ in range(count)])


def _texts(made: list[ULID]) -> list[str]:
    """The text of each id, exactly what ``str(ULID)`` writes, in one pass: numpy reads each
    id's 128 bits after two zero bits 5 at a time, a Crockford character each."""
    import numpy as np  # the bulk paths only: numpy is not loaded for a single write

    count = len(made)
    raw = np.frombuffer(b"".join([u.bytes for u in made]), dtype=np.uint8).reshape(count, 16)
    bits = np.concatenate([np.zeros((count, 2), np.uint8), np.unpackbits(raw, axis=1)], axis=1)
    digits = bits.reshape(count, ID_LENGTH, _BITS) @ (1 << np.arange(_BITS - 1, -1, -1)).astype(np.uint8)
    text = np.frombuffer(_CROCKFORD, dtype=np.uint8)[digits].tobytes().decode("ascii")
    return [text[start:start + ID_LENGTH] for start in range(0, ID_LENGTH * count, ID_LENGTH)]


ID_BATCH = 1000
"""How many ids :func:`id_stream` makes at once unless told otherwise."""


def id_stream(batch: int = ID_BATCH) -> Iterator[str]:
    """New ids without end, made :func:`new_ids` ``batch`` at a time (for a loop that needs one
    id per row as it reads them); each later than the one before."""
    while True:
        yield from new_ids(batch)


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
