"""Record lists built on :class:`RecordQuery`: a page, counts by schema and
the cross-collection picker list (``GET /records``); the exports are :mod:`.exports`, deleting what a
list shows :mod:`.deleting`."""
from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import Select, func, or_, select
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from benchbook.domain.catalog.lookup import find_collection, find_schema, schema_names
from benchbook.domain.errors import NotFound, error_entry
from benchbook.domain.records.counting import (
    bounded_total,
    budget_clock,
    interrupted,
    interruptible,
)
from benchbook.domain.records.derived import check_columns
from benchbook.domain.records.queries import Conditions, RecordQuery, SortLead
from benchbook.domain.records.search import search_condition
from benchbook.domain.records.shapes import PaginatedRecordResponse, RecordCountsResponse, RecordResponse
from benchbook.domain.records.shaping import RecordShaper
from benchbook.persistence.record_counts import live_counts
from benchbook.persistence.tables import Collection, Record, Schema

log = logging.getLogger(__name__)

WALK_MS = 150
"""Milliseconds a page may spend walking an index in its own order (:func:`_walked`: its sort
field's on SQLite, :func:`_sorted_page`; the ids', :func:`_unsorted_page`) before reading every
match is taken to be the better plan: the request thread's CPU time on SQLite
(:func:`counting.work_clock`), the statement's wall-clock time on PostgreSQL. At 1,000,000
records a sorted walk that finds its
page takes 5-100 ms (the most when matches are rare along the sort order, as with an ancestor
leaf: one record in 450), while sorting every match takes 250-500 ms."""

SORT_ALL_UP_TO = 4000
"""Matches (counted exactly) up to which a sorted page sorts them all rather than walking the
sort index: sorting that many costs about what counting them did, while the walk may pass many
records between two rare matches."""


def list_page(session: Session, collection_name: str, query: RecordQuery, *, limit: int, offset: int,
              child_counts: bool = False, columns: list[str] | None = None) -> PaginatedRecordResponse:
    """Paginated RecordResponse list ``{items, total, total_exact, offset, limit}``; ``columns``
    adds ``derived`` values (422 for a column no listed schema can answer). ``limit`` 0 gives no
    items, only the ``total`` (always exact). ``total_exact`` false: ``total`` is a lower bound,
    the count having run out of its budget (:mod:`benchbook.domain.records.counting`)."""
    shaper = RecordShaper(session)
    collection = shaper.cache.collection_named(collection_name)
    parts = query.parts(session, collection)
    conds = parts.all
    if columns:
        check_columns(shaper.cache, query.listed_metas(shaper.cache, collection.id), columns)
    sqlite = session.get_bind().dialect.name == "sqlite"
    lead = query.leading_sort(session, collection, shaper.cache) if limit and query.sort else None
    walked = (_sorted_page(session, query, collection, parts, lead, limit=limit, offset=offset)
              if lead and sqlite else None)
    plain = not (query.filter or query.search or query.where or query.sort or query.within)
    if walked:
        ids, total, exact = walked
    elif plain and limit:
        ids, total, exact = _plain_page(session, conds, limit=limit, offset=offset)
    elif query.sort and limit and not sqlite:
        ids, total, exact = _limited_page(session, query, collection, conds, lead, limit=limit, offset=offset)
    elif (unsorted := _unsorted_page(session, query, parts, limit=limit, offset=offset)) is not None:
        ids, total, exact = unsorted
    else:
        ids, total, exact = _page(session, query, collection, conds, limit=limit, offset=offset)
    items = shaper.shape(_in_order(session, ids), child_counts=child_counts, columns=columns)
    return {"items": items, "total": total, "total_exact": exact, "offset": offset, "limit": limit}


def _in_order(session: Session, ids: list[str]) -> list[Record]:
    """The records ``ids`` (which must exist), in that order, read in one statement."""
    found = {r.id: r for r in session.scalars(select(Record).where(Record.id.in_(ids)))}
    return [found[i] for i in ids]


def _page(session: Session, query: RecordQuery, collection: Collection, conds: list[Any], *, limit: int,
          offset: int) -> tuple[list[str], int, bool]:
    """``(ids of the page, total, True)`` in one pass over the matching records (``count(*) OVER
    ()``, no record values carried along: the sort reads every match anyway, so the total is
    exact); only a page past the end needs a count of its own."""
    page = session.execute(select(Record.id, func.count().over()).where(*conds)
                           .order_by(*query.order_by(session, collection)).limit(limit).offset(offset)).all()
    if page:
        return [p[0] for p in page], int(page[0][1]), True
    counted = offset or limit == 0  # a page past the end, or only the total asked for (limit 0)
    total = (session.scalar(select(func.count()).select_from(Record).where(*conds)) or 0) if counted else 0
    return [], total, True


def _unsorted_page(session: Session, query: RecordQuery, parts: Conditions, *, limit: int,
                   offset: int) -> tuple[list[str], int, bool] | None:
    """:func:`_page` for a page in id order with a filter, search, ``where`` or ``within``: the
    matches are counted first within the page's count budget (:func:`counting.bounded_total`).
    When that count finishes, the page is read among the matches it counted (few enough to find
    them all at once); when it does not, matches are many, and the page is found by walking the
    records in id order, with ``total`` the lower bound. At 1,000,000 records on SQLite an exact
    count cost 160 ms (``label = alpha``, 50,000 matches) to 2,400 ms (``flag = true``, 333,000)
    of pages the walk finds in 1-15 ms. A common word's search page walks too: SQLite reads the
    search table's matches as one list before the walk tests each record against it, which
    still costs less than reading every match in id order (``alpha``, 476,000 matches: 395 ms
    exact, 135 ms walked, with or without a schema). None where :func:`_page` (one pass, exact)
    answers instead: a sorted page or ``limit`` 0, or on SQLite a page whose walk
    (:func:`_walk_ids`) runs out of :data:`WALK_MS` or cannot run.

    On PostgreSQL the page among counted matches gathers them first (a ``MATERIALIZED`` CTE),
    found by the cheapest way to find them all: its planner, given ``ORDER BY id LIMIT`` and a
    search word it overestimates (it takes every prefix query to match 0.5 % of the records),
    walked the primary key through every record instead of reading the search index (10.8 s for
    the 101 records matching ``quixotic`` among 1,000,000; 17 ms now). When the walk runs out
    of time there, the gathered matches are counted with the page, in one pass."""
    if query.sort or not limit:
        return None
    sqlite = session.get_bind().dialect.name == "sqlite"
    conds = parts.all
    total, exact = _counted(session, parts, at_least=0)
    if not exact:
        ids = _walk_ids(session, conds, limit=limit, offset=offset, schema=query.schema is not None)
        if ids is not None:
            if _is_last(ids, limit=limit, offset=offset):
                return ids, offset + len(ids), True
            return ids, max(total, offset + len(ids)), False
        if sqlite:
            return None
    if sqlite:  # counted exactly (a cut-short count returned above)
        return list(session.scalars(select(Record.id).where(*conds).order_by(Record.id)
                                    .limit(limit).offset(offset))), total, True
    gathered = select(Record.id).where(*conds).cte("matches").prefix_with("MATERIALIZED")  # (above)
    if exact:
        return list(session.scalars(select(gathered.c.id).order_by(gathered.c.id)
                                    .limit(limit).offset(offset))), total, True
    # the walk ran out: the gathered matches counted with the page, in one pass
    rows = session.execute(select(gathered.c.id, func.count().over()).order_by(gathered.c.id)
                           .limit(limit).offset(offset)).all()
    if rows:
        return [r[0] for r in rows], int(rows[0][1]), True
    return [], session.scalar(select(func.count()).select_from(Record).where(*conds)) or 0, True  # past the end


def _counted(session: Session, parts: Conditions, *, at_least: int) -> tuple[int, bool]:
    """:func:`counting.bounded_total` of the records ``parts`` match; on SQLite a search's
    matches are read from the search table first (its ``search`` argument)."""
    if parts.match is None:
        return bounded_total(session, parts.all, at_least=at_least)
    return bounded_total(session, parts.others, at_least=at_least, search=parts.match)


def _walk_ids(session: Session, conds: list[Any], *, limit: int, offset: int, schema: bool = True) -> list[str] | None:
    """The ids of a page in id order found by walking the records in that order, or None when
    the walk runs out of :data:`WALK_MS` (the matches are rare along the ids, or the page is
    deep) or, on SQLite, its index is missing. SQLite's planner does not weigh ``LIMIT``, so the
    walk is named: ``ix_records_listing`` when ``conds`` hold one schema (``schema``), else the
    primary key's own index (:data:`PRIMARY_KEY_INDEX`), which gives id order across schemas."""
    index = "ix_records_listing" if schema else PRIMARY_KEY_INDEX
    return _walked_along(session, select(Record.id).where(*conds).order_by(Record.id).limit(limit).offset(offset),
                         index)


def _walked_along(session: Session, statement: Select[Any], index: str) -> list[str] | None:
    """:func:`_walked` with ``statement`` walking ``index`` on SQLite (``INDEXED BY``); None
    also when that index is missing (a field's index dropped by hand, a database whose primary
    key index SQLite named otherwise), which is logged."""
    try:
        return _walked(session, statement.with_hint(Record, f"INDEXED BY {index}", "sqlite"))
    except OperationalError as exc:
        log.warning("a page without the index walk: %s", exc)
        return None


PRIMARY_KEY_INDEX = "sqlite_autoindex_records_1"
"""The name SQLite gives the index of ``records``' text primary key (``id``)."""


def _walked(session: Session, statement: Select[Any]) -> list[str] | None:
    """The ids ``statement`` finds walking an index in its order, or None when the walk runs
    out of :data:`WALK_MS` (:func:`counting.interruptible`: the request thread's CPU time on
    SQLite, the statement's timeout elsewhere). Raises ``OperationalError`` for any other
    failure of the statement (a missing index, say)."""
    clock = budget_clock(session)
    try:
        with interruptible(session, clock() + WALK_MS / 1000, clock) as arm:
            return list(session.scalars(statement)) if arm() else None
    except OperationalError as exc:
        if not interrupted(exc):
            raise
        return None


def _limited_page(session: Session, query: RecordQuery, collection: Collection, conds: list[Any],
                  lead: SortLead | None, *, limit: int, offset: int) -> tuple[list[str], int, bool]:
    """:func:`_page` for a sorted page on PostgreSQL: the page by itself, and ``total`` counted
    within the page's budget (:func:`counting.bounded_total`) unless the page shows it is the
    last. Its planner weighs ``LIMIT``: it walks the sort field's index when matches are many,
    since the sort keys are the index's order (``NULLS LAST``) and the field's expression
    statistics tell it how many match (migration 0014). The index holds only records with a
    value, so a sort led by an indexed own field (``lead``) asks first for records holding one,
    which come first anyway; a page that comes out short goes on among records without a value
    and is asked for again whole. At 1,000,000 records a three-leaf filter matching 36,000 took
    235 ms with the count carried through the sort (``count(*) OVER ()``), 26 ms now
    (docs/performance.md)."""
    order = query.order_by(session, collection)
    ids: list[str] = []
    if lead is not None:  # among records holding a value NULLS LAST is moot: a descending key
        # is asked for as the index walked backwards gives it (NULLS FIRST), else PostgreSQL
        # sorted every match (label:desc at 1,000,000 records: 195 ms)
        first = lead.expr.desc() if lead.descending else lead.expr.asc()
        ids = list(session.scalars(select(Record.id).where(*conds, lead.expr.is_not(None))
                                   .order_by(first, *order[1:]).limit(limit).offset(offset)))
    if len(ids) < limit:
        ids = list(session.scalars(select(Record.id).where(*conds).order_by(*order).limit(limit).offset(offset)))
    if _is_last(ids, limit=limit, offset=offset):
        return ids, offset + len(ids), True
    total, exact = bounded_total(session, conds, at_least=offset + len(ids) if ids else 0)
    return ids, total, exact


def _plain_page(session: Session, conds: list[Any], *, limit: int, offset: int) -> tuple[list[str], int, bool]:
    """:func:`_page` for a listing whose conditions are all indexed (collection, schema, parent)
    in id order: the page by itself (the planner walks the id index when matches are dense,
    else sorts the few) and, unless the page shows it is the last, an exact ``count(*)`` over
    the listing index. ``count(*) OVER ()`` made SQLite carry every match through a window and
    a sort: 13 ms for a page of 20,000 records, now about 2."""
    ids = list(session.scalars(select(Record.id).where(*conds).order_by(Record.id.asc()).limit(limit).offset(offset)))
    if _is_last(ids, limit=limit, offset=offset):
        return ids, offset + len(ids), True
    return ids, session.scalar(select(func.count()).select_from(Record).where(*conds)) or 0, True


def _is_last(ids: list[str], *, limit: int, offset: int) -> bool:
    """Whether a page that came out as ``ids`` is the last one (or there are none at all), so
    that its end, ``offset + len(ids)``, is the total and nothing needs counting."""
    return 0 < len(ids) < limit or (not ids and not offset)


def _sorted_page(session: Session, query: RecordQuery, collection: Collection, parts: Conditions,
                 lead: SortLead, *, limit: int, offset: int) -> tuple[list[str], int, bool] | None:
    """:func:`_page` for a sort led by an indexed own field or base column (``lead``: its
    index, migration 0016 for ``created_at``, ``updated_at`` and ``natural_name``), on SQLite,
    or None when sorting every match is the better plan. SQLite's planner does not weigh
    ``LIMIT``: it narrows by the most
    selective filter and sorts every match, even when walking the sort field's own index finds
    the page after a few thousand entries (first page of 50 among 1,000,000 records: 15 ms
    instead of 250). So the matches are counted first, within the page's count budget
    (:func:`counting.bounded_total`); up to :data:`SORT_ALL_UP_TO` of them, counted exactly,
    are sorted (cheap, and a walk could pass a long way between rare matches); more are found by
    walking the index (``INDEXED BY``, only records holding a value), given up after
    :data:`WALK_MS` (a progress handler interrupts it). A page that would reach records without
    a value is not walked."""
    conds = parts.all
    total, exact = _counted(session, parts, at_least=0)
    if exact and total <= SORT_ALL_UP_TO:
        return None
    statement = (select(Record.id).where(*conds, lead.expr.is_not(None))
                 .order_by(*query.order_by(session, collection)[1:])  # "nulls last" is constant here
                 .limit(limit).offset(offset))
    ids = _walked_along(session, statement, lead.index)
    if ids is None:  # walked too far (the matches are rare or the page deep), or no index: sorting answers
        return None
    if not exact and ids:
        total = max(total, offset + len(ids))
    if len(ids) < limit and (not exact or offset + len(ids) < total):
        return None  # the page goes on among records without a value (or may: the count stopped short)
    return ids, total, exact


def record_counts(session: Session, name_or_id: str, query: RecordQuery) -> RecordCountsResponse:
    """Live records matching ``query`` grouped by schema name: ``{counts, total}``. ``schema``
    groups rather than filters, except that only that schema is counted when it is given."""
    collection = find_collection(session, name_or_id)
    conds = query.conditions(session, collection)
    rows: list[tuple[str, int]]
    if not (query.filter or query.parent_record_id or query.search or query.where or query.within):
        kept = live_counts(session, collection.id)  # every live record: kept on SQLite (migration 0019)
        chosen = query.schema_of(session, collection)
        if chosen is not None:
            kept = {chosen.id: kept.get(chosen.id, 0)}
        rows = [(name, kept[sid]) for sid, name in session.execute(select(Schema.id, Schema.name)
                                                                   .where(Schema.id.in_(kept)))] if kept else []
    else:
        rows = [(name, n) for name, n in session.execute(
            select(Schema.name, func.count()).select_from(Record).join(Schema, Schema.id == Record.schema_id)
            .where(*conds).group_by(Schema.name))]
    names = [query.schema] if query.schema else schema_names(session, collection.id)
    counts = {n: 0 for n in names}
    counts.update({name: n for name, n in rows})
    return {"counts": counts, "total": sum(counts.values())}


def search_records(session: Session, *, limit: int, schema: str | None, search: str | None,
                   reachable_from: str | None) -> list[RecordResponse]:
    """``GET /records``: live records of any collection, newest first; ``reachable_from``
    keeps those a record of that collection may reference (its own and global collections')."""
    conds: list[Any] = [Record.deleted_at.is_(None)]
    live_collections = select(Collection.id).where(Collection.deleted_at.is_(None))
    conds.append(Record.dataset_id.in_(live_collections))
    if schema:
        try:
            conds.append(Record.schema_id == find_schema(session, schema).id)
        except NotFound:
            raise NotFound(f"unknown schema {schema!r}",
                           [error_entry(["query", "schema"], "unknown schema", "unknown_schema", schema)]) from None
    if reachable_from:
        home = find_collection(session, reachable_from)
        conds.append(or_(Record.dataset_id == home.id, Record.dataset_id.in_(
            select(Collection.id).where(Collection.scope == "global", Collection.deleted_at.is_(None)))))
    matched = search_condition(session, search) if search else None
    if matched is not None:
        conds.append(matched)
    newest = select(Record.id).where(*conds).order_by(Record.id.desc()).limit(limit)
    ids = None
    if matched is not None and session.get_bind().dialect.name == "sqlite":
        # SQLite's planner does not weigh LIMIT: it sorted every match of a common word (476,000
        # at 1,000,000 records: 880 ms) where walking the ids newest first finds 20 in 60 ms
        ids = _walked_along(session, newest, PRIMARY_KEY_INDEX)
    if ids is None:
        ids = list(session.scalars(newest))
    return RecordShaper(session).shape(_in_order(session, ids))
