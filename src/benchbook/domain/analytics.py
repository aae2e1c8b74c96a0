"""Analytics (OpenAPI tag ``analytics``; docs/decisions.md *Analytics*): read-only aggregates over
records, audit entries, runs and AI usage.

Every answer is one SQL statement (``jobs/duration``: two) whatever the number of rows: the
grouping, the time buckets and the walk over the runs' step executions all happen in the
database, on SQLite and on PostgreSQL alike (docs/decisions.md, *Analytics*).

- **Range**: ``start`` inclusive, ``end`` exclusive, both optional ISO 8601 (a date is its
  midnight; a time without zone is UTC), on the endpoint's primary timestamp: a record's
  ``created_at``, an audit entry's ``timestamp``, a run's ``created_at`` (step executions are
  placed by their run), a request to an AI model's ``created_at``. A range with nothing in it, ``start`` at or after ``end`` included,
  answers empty ``items``.
- **Buckets** ``day``, ``week`` (ISO weeks, Monday first) and ``month``, in UTC, each labelled by
  its first day as ``YYYY-MM-DD``; computed in SQL, by day (:func:`day_of`) and then by bucket
  (:func:`bucket_of_day`).
- **Step executions** are elements of the JSON list ``jobs.step_executions``; :class:`_Steps` turns
  them into rows (SQLite ``json_each``, PostgreSQL ``jsonb_array_elements``) in one place.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any, TypeVar, cast

from sqlalchemy import (
    BigInteger,
    Date,
    DateTime,
    FromClause,
    Numeric,
    Select,
    Subquery,
    case,
    func,
    literal_column,
    select,
    true,
    union_all,
)
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from benchbook.domain.analytics_shapes import (
    AiUsageItem,
    AnalyticsAiUsage,
    AnalyticsAuditEvents,
    AnalyticsFailuresByPlugin,
    AnalyticsJobDurations,
    AnalyticsJobsByTrigger,
    AnalyticsJobStatus,
    AnalyticsRecordCounts,
    AnalyticsRecordGrowth,
    AuditEventsItem,
    FailuresByPluginItem,
    JobsByTriggerItem,
    JobStatusItem,
    RecordCountItem,
    RecordGrowthItem,
)
from benchbook.domain.errors import Invalid, error_entry
from benchbook.persistence import record_counts
from benchbook.persistence.tables import (
    AiUsage,
    AuditDay,
    AuditEntry,
    Collection,
    Job,
    Record,
    RecordCount,
    RecordDay,
    Schema,
    sqlite_day,
)

BUCKETS = ("day", "week", "month")
PERCENTILES = (50, 90, 99)
BIN_COUNT = 10
NICE_STEPS = (1, 2, 5)
"""Bin widths are 1, 2 or 5 times a power of ten milliseconds (see :func:`bin_width_ms`)."""

#: Where a ``start`` past the last instant Python holds in UTC begins (the timestamps counted are
#: the server's own, never this late); such an ``end`` is no bound at all.
LAST_DAY = datetime(9999, 12, 31, tzinfo=UTC)
Item = TypeVar("Item")
"""An answer's item type (a TypedDict of :mod:`.analytics_shapes`), for :func:`_items`."""


# ------------------------------------------------------------------------------------ parameters

def parse_instant(name: str, value: str | None) -> datetime | None:
    """``start``/``end``: ISO 8601 date or date-time, UTC when it has no zone. Raises ``Invalid``."""
    if value is None or not value.strip():
        return None
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise Invalid(f"{name}: {value!r} is not an ISO 8601 date or date-time",
                      [error_entry(["query", name], "not an ISO 8601 date or date-time", "datetime",
                                   value)]) from None
    moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # 9999-12-31T23:00-05:00 is in year 10000 in UTC: later than anything stored
        return None if name == "end" else LAST_DAY


def check_bucket(bucket: str | None) -> str:
    """The bucket size, ``day`` by default (the document's enum already refuses others)."""
    bucket = bucket or "day"
    if bucket not in BUCKETS:
        raise Invalid(f"bucket: {bucket!r} is not one of {', '.join(BUCKETS)}",
                      [error_entry(["query", "bucket"], "not a bucket size", "enum", bucket,
                                   {"expected": list(BUCKETS)})])
    return bucket


def in_range(column: Any, start: str | None, end: str | None) -> list[ColumnElement[bool]]:
    """Conditions for ``start <= column < end`` (each bound only when given)."""
    low, high = parse_instant("start", start), parse_instant("end", end)
    conds: list[ColumnElement[bool]] = []
    if low is not None:
        conds.append(column >= low)
    if high is not None:
        conds.append(column < high)
    return conds


# ------------------------------------------------------------------------------------- dialects

def _dialect(session: Session) -> str:
    return session.get_bind().dialect.name


def _sql(text: str) -> ColumnElement[Any]:
    """A constant written into the statement, not bound: the same expression in SELECT and GROUP BY
    must be the very same text for PostgreSQL (two bound parameters are two different values)."""
    return literal_column("'" + text.replace("'", "''") + "'")


def day_of(dialect: str, column: Any) -> ColumnElement[Any]:
    """The UTC day of a timestamp column, in SQL: SQLite keeps timestamps as naive UTC text
    ``YYYY-MM-DD HH:MM:SS.ffffff`` (:class:`~benchbook.persistence.tables.UTCDateTime`), so its
    first ten characters (far cheaper than a date function on every row); PostgreSQL the date of
    the time read in UTC, whatever the session's time zone."""
    if dialect == "postgresql":
        return func.timezone(_sql("UTC"), column).cast(Date())
    return sqlite_day(column)


def bucket_of_day(dialect: str, day: Any, bucket: str) -> ColumnElement[str]:
    """The bucket of a :func:`day_of` value as ``YYYY-MM-DD``, the bucket's first day.

    SQLite: a month is the day's first seven characters and ``-01``; an ISO week is
    ``date(day, '-6 days', 'weekday 1')`` (six days back, then forward to the first Monday on or
    after that: the Monday of the day's week). PostgreSQL: ``date_trunc`` (its weeks are ISO
    weeks) of the day as a timestamp without zone."""
    if dialect == "postgresql":
        moment = day.cast(DateTime())  # no zone: to_char and date_trunc never consult the session's
        start = moment if bucket == "day" else func.date_trunc(_sql(bucket), moment)
        return func.to_char(start, _sql("YYYY-MM-DD"))
    if bucket == "week":
        return func.date(day, _sql("-6 days"), _sql("weekday 1"))
    if bucket == "month":
        return func.substr(day, literal_column("1"), literal_column("7")).concat(_sql("-01"))
    return day  # type: ignore[no-any-return]


def _per_bucket(session: Session, size: str, inner: Subquery, keys: list[Any], *joins: tuple[Any, Any]) -> Any:
    """Counts grouped by day (``inner``: columns ``day``, the grouping columns, ``n``) regrouped by
    bucket and ``keys`` (columns of ``inner`` or of the tables ``joins`` adds), ordered by them.
    Grouping by day first keeps the per-row work to :func:`day_of`; the bucket is worked out once
    per day, not once per row."""
    by = [bucket_of_day(_dialect(session), inner.c.day, size), *keys]
    stmt = select(*by, func.sum(inner.c.n)).select_from(inner)
    for table, on in joins:
        stmt = stmt.join(table, on)
    return stmt.group_by(*by).order_by(*by)


@dataclass
class _Steps:
    """The step executions of runs as rows: join :attr:`rows` to ``jobs`` (``ON true``) and read
    :attr:`plugin`, :attr:`status` and :attr:`duration_ms` (a whole number of milliseconds, null
    when the step has none). The one place that knows how each backend walks a JSON list: SQLite
    ``json_each``, PostgreSQL ``jsonb_array_elements`` (a table-valued function in FROM, which may
    read the run's row). A ``step_executions`` that is null or not a list gives no rows; an element
    that is not an object reads as nulls, so no condition on it holds."""

    rows: FromClause
    plugin: ColumnElement[Any]
    status: ColumnElement[Any]
    duration_ms: ColumnElement[Any]

    @classmethod
    def of(cls, dialect: str) -> _Steps:
        column = Job.step_executions
        if dialect == "postgresql":
            listed = case((func.jsonb_typeof(column) == _sql("array"), column), else_=literal_column("'[]'::jsonb"))
            rows = func.jsonb_array_elements(listed).table_valued("value").alias("step")
            value = rows.c.value  # ->> of a key is null for an element that is not an object

            def text_of(key: str) -> ColumnElement[Any]:
                return value.op("->>")(_sql(key))

            number = func.jsonb_typeof(value.op("->")(_sql("duration_ms"))) == _sql("number")
            duration = func.round(text_of("duration_ms").cast(Numeric())).cast(BigInteger())
            return cls(rows, text_of("plugin"), text_of("status"), case((number, duration)))
        listed = case((func.json_type(column) == _sql("array"), column), else_=_sql("[]"))
        rows = func.json_each(listed).table_valued("value", "type").alias("step")
        step = case((rows.c.type == _sql("object"), rows.c.value))  # json_extract refuses a bare string

        def extract(key: str) -> ColumnElement[Any]:
            return func.json_extract(step, _sql(f"$.{key}"))

        number = func.json_type(step, _sql("$.duration_ms")).in_([_sql("integer"), _sql("real")])
        return cls(rows, extract("plugin"), extract("status"),
                   case((number, func.round(extract("duration_ms")).cast(BigInteger()))))


def _items(session: Session, stmt: Select[*tuple[Any, ...]], keys: tuple[str, ...],
           shape: type[Item]) -> list[Item]:
    """One item per row of ``stmt``: its leading columns under ``keys``, its last as ``count``.
    ``shape`` is the item's TypedDict, whose keys are ``keys`` and ``count``: the type checker
    cannot see that the keys given are its keys, so the caller says which it is."""
    return cast(list[Item], [{**dict(zip(keys, row[:-1], strict=True)), "count": int(row[-1])}
                             for row in session.execute(stmt)])


# ---------------------------------------------------------------------------------------- records

def _record_filters(collection: str | None, schema: str | None, dataset_id: Any = Record.dataset_id,
                    schema_id: Any = Record.schema_id) -> list[ColumnElement[bool]]:
    """Conditions on the columns ``dataset_id`` and ``schema_id`` (the records', or the kept
    counts') for the ``collection`` and ``schema`` names given."""
    conds: list[ColumnElement[bool]] = []
    if collection:
        conds.append(dataset_id.in_(select(Collection.id).where(Collection.name == collection)))
    if schema:
        conds.append(schema_id.in_(select(Schema.id).where(Schema.name == schema)))
    return conds


def records_counts(session: Session, *, collection: str | None = None,
                   schema: str | None = None) -> AnalyticsRecordCounts:
    """Live records now, by collection and schema name (a snapshot: no range, no bucket). On
    SQLite read from the counts the database keeps (``persistence.record_counts``: 2 ms where
    counting 1,000,000 records took 68 ms), elsewhere counted."""
    if record_counts.kept(_dialect(session)):
        kept = RecordCount
        counted = (select(kept.dataset_id, kept.schema_id, kept.live.label("n"))
                   .where(kept.live > 0, *_record_filters(collection, schema, kept.dataset_id, kept.schema_id))
                   .subquery("counted"))
    else:
        counted = (select(Record.dataset_id, Record.schema_id, func.count().label("n"))
                   .where(Record.deleted_at.is_(None), *_record_filters(collection, schema))
                   .group_by(Record.dataset_id, Record.schema_id).subquery("counted"))
    by = [Collection.name, Schema.name]  # joined over the groups, not over the records
    stmt = (select(*by, func.sum(counted.c.n)).select_from(counted)
            .join(Collection, Collection.id == counted.c.dataset_id).join(Schema, Schema.id == counted.c.schema_id)
            .group_by(*by).order_by(*by))
    return {"items": _items(session, stmt, ("dataset", "schema_name"), RecordCountItem)}


def records_growth(session: Session, *, start: str | None = None, end: str | None = None,
                   bucket: str | None = None, collection: str | None = None,
                   schema: str | None = None) -> AnalyticsRecordGrowth:
    """Records created per bucket, collection and schema: every record row whose ``created_at`` is
    in the range, deleted since or not (a purged record is gone and no longer counted). On SQLite
    the whole days come from the counts the database keeps (``persistence.record_counts``),
    elsewhere the records are grouped by day."""
    size = check_bucket(bucket)
    dialect = _dialect(session)
    day = day_of(dialect, Record.created_at)
    rows = (select(day.label("day"), Record.dataset_id, Record.schema_id, func.count().label("n"))
            .where(*_record_filters(collection, schema)).group_by(day, Record.dataset_id, Record.schema_id))
    if record_counts.kept(dialect):
        kept = (select(RecordDay.day, RecordDay.dataset_id, RecordDay.schema_id, RecordDay.created.label("n"))
                .where(RecordDay.created != 0,
                       *_record_filters(collection, schema, RecordDay.dataset_id, RecordDay.schema_id)))
        counted = _days_and_parts(start, end, kept, RecordDay.day, rows, Record.created_at)
    else:
        counted = rows.where(*in_range(Record.created_at, start, end)).subquery("counted")
    stmt = _per_bucket(session, size, counted, [Collection.name, Schema.name],
                       (Collection, Collection.id == counted.c.dataset_id), (Schema, Schema.id == counted.c.schema_id))
    return {"bucket": size, "items": _items(session, stmt, ("bucket", "dataset", "schema_name"), RecordGrowthItem)}


def _days_and_parts(start: str | None, end: str | None, kept: Select[*tuple[Any, ...]], kept_day: Any,
                    rows: Select[*tuple[Any, ...]], at: Any) -> Subquery:
    """Counts per UTC day in ``[start, end)`` (SQLite), as subquery ``counted``: the whole days
    inside the range from ``kept`` (counts the database keeps, ``kept_day`` their day column),
    and each day the range takes only part of (a bound with a time of day) from ``rows`` (the
    same columns, grouped from the rows themselves) in just that part of it, read through the
    index on ``at``."""
    low, high = parse_instant("start", start), parse_instant("end", end)  # both in UTC
    whole_from = low if low is None or low.time() == time.min else _midnight(low) + timedelta(days=1)
    whole_to = high if high is None or high.time() == time.min else _midnight(high)
    if whole_from is not None:
        kept = kept.where(kept_day >= whole_from.date().isoformat())
    if whole_to is not None:
        kept = kept.where(kept_day < whole_to.date().isoformat())
    parts: list[tuple[datetime, datetime]] = []  # the stretches of partly taken days
    if low is not None and whole_from is not None and whole_from != low:
        parts.append((low, whole_from if high is None else min(whole_from, high)))
    if high is not None and whole_to is not None and whole_to != high:
        part = (whole_to if low is None else max(whole_to, low), high)
        if not parts or parts[0][1] <= part[0]:  # not the day the first stretch already took
            parts.append(part)
    counted = [rows.where(at >= a, at < b) for a, b in parts if a < b]
    return union_all(kept, *counted).subquery("counted") if counted else kept.subquery("counted")


def _midnight(moment: datetime) -> datetime:
    """The UTC midnight starting ``moment``'s day."""
    return datetime.combine(moment.date(), time.min, tzinfo=moment.tzinfo)


# ------------------------------------------------------------------------------------------ audit

def audit_events(session: Session, *, start: str | None = None, end: str | None = None, bucket: str | None = None,
                 action: str | None = None, entity_type: str | None = None) -> AnalyticsAuditEvents:
    """Audit entries per bucket, action and entity type (one entry per change; no per-user split).
    On SQLite the whole days come from the counts the database keeps (``persistence.audit_days``),
    elsewhere the entries are grouped by day."""
    size = check_bucket(bucket)
    dialect = _dialect(session)
    day = day_of(dialect, AuditEntry.timestamp)
    conds: list[ColumnElement[bool]] = []
    kept_conds: list[ColumnElement[bool]] = [AuditDay.entries != 0]
    if action:
        conds.append(AuditEntry.action == action)
        kept_conds.append(AuditDay.action == action)
    if entity_type:
        conds.append(AuditEntry.entity_type == entity_type)
        kept_conds.append(AuditDay.entity_type == entity_type)
    by = [day, AuditEntry.action, AuditEntry.entity_type]
    rows = (select(day.label("day"), AuditEntry.action, AuditEntry.entity_type, func.count().label("n"))
            .where(*conds).group_by(*by))
    if record_counts.kept(dialect):
        kept = select(AuditDay.day, AuditDay.action, AuditDay.entity_type, AuditDay.entries.label("n")).where(*kept_conds)
        counted = _days_and_parts(start, end, kept, AuditDay.day, rows, AuditEntry.timestamp)
    else:
        counted = rows.where(*in_range(AuditEntry.timestamp, start, end)).subquery("counted")
    stmt = _per_bucket(session, size, counted, [counted.c.action, counted.c.entity_type])
    return {"bucket": size, "items": _items(session, stmt, ("bucket", "action", "entity_type"), AuditEventsItem)}


# ------------------------------------------------------------------------------------------- runs

def _run_filters(start: str | None, end: str | None, *, workflow_id: str | None = None, status: str | None = None,
                 trigger: str | None = None) -> list[ColumnElement[bool]]:
    conds = in_range(Job.created_at, start, end)
    if workflow_id:
        conds.append(Job.workflow_name == workflow_id)
    if status:
        conds.append(Job.status == status)
    if trigger:
        conds.append(Job.trigger == trigger)
    return conds


def jobs_by_trigger(session: Session, *, start: str | None = None, end: str | None = None,
                    workflow_id: str | None = None, status: str | None = None,
                    trigger: str | None = None) -> AnalyticsJobsByTrigger:
    """Runs created in the range, by trigger (a snapshot over the range: no bucket)."""
    conds = _run_filters(start, end, workflow_id=workflow_id, status=status, trigger=trigger)
    stmt = select(Job.trigger, func.count()).where(*conds).group_by(Job.trigger).order_by(Job.trigger)
    return {"items": _items(session, stmt, ("trigger",), JobsByTriggerItem)}


def jobs_status(session: Session, *, start: str | None = None, end: str | None = None, bucket: str | None = None,
                workflow_id: str | None = None, trigger: str | None = None,
                status: str | None = None) -> AnalyticsJobStatus:
    """Runs per bucket of their ``created_at`` and status."""
    size = check_bucket(bucket)
    conds = _run_filters(start, end, workflow_id=workflow_id, status=status, trigger=trigger)
    day = day_of(_dialect(session), Job.created_at)
    counted = (select(day.label("day"), Job.status, func.count().label("n")).where(*conds)
               .group_by(day, Job.status).subquery("counted"))
    stmt = _per_bucket(session, size, counted, [counted.c.status])
    return {"bucket": size, "items": _items(session, stmt, ("bucket", "status"), JobStatusItem)}


def jobs_failures_by_plugin(session: Session, *, start: str | None = None, end: str | None = None,
                            bucket: str | None = None, plugin_id: str | None = None) -> AnalyticsFailuresByPlugin:
    """Failed step executions (the step's own status is ``failed``) per bucket of their run's
    ``created_at`` and plugin."""
    size = check_bucket(bucket)
    steps = _Steps.of(_dialect(session))
    conds = [*in_range(Job.created_at, start, end), steps.status == "failed", steps.plugin.is_not(None)]
    if plugin_id:
        conds.append(steps.plugin == plugin_id)
    day = day_of(_dialect(session), Job.created_at)
    counted = (select(day.label("day"), steps.plugin.label("plugin"), func.count().label("n"))
               .select_from(Job).join(steps.rows, true()).where(*conds)
               .group_by(day, steps.plugin).subquery("counted"))
    stmt = _per_bucket(session, size, counted, [counted.c.plugin])
    return {"bucket": size, "items": _items(session, stmt, ("bucket", "plugin"), FailuresByPluginItem)}


def bin_width_ms(max_ms: int) -> int:
    """The width of each of the :data:`BIN_COUNT` duration bins: the smallest 1, 2 or 5 times a
    power of ten milliseconds (at least 1 ms) whose ten bins reach the longest duration, so the bins
    run from 0 to the longest duration rounded up to a round number (longest 3.7 s → 0-5 s in
    0.5 s bins; 12 ms → 0-20 ms in 2 ms bins)."""
    power = 1
    while True:
        for step in NICE_STEPS:
            if step * power * BIN_COUNT >= max_ms:
                return step * power
        power *= 10


def _seconds_text(ms: int) -> str:
    return f"{ms / 1000:.3f}".rstrip("0").rstrip(".")


def bin_label(index: int, width_ms: int) -> str:
    """``0-0.5s``, ``0.5-1s``, …: the bin's bounds in seconds (lower inclusive; the last bin also
    holds its upper bound)."""
    return f"{_seconds_text(index * width_ms)}-{_seconds_text((index + 1) * width_ms)}s"


def jobs_duration(session: Session, *, start: str | None = None, end: str | None = None,
                  plugin_id: str | None = None, status: str | None = None) -> AnalyticsJobDurations:
    """Durations of the step executions of runs created in the range that have one (a step
    cancelled before it started has none), matched on the step's own plugin and status.

    Two queries: the count, mean, extremes and nearest-rank percentiles (p-th: the duration at rank
    ceil(p/100 * count) in duration order, by ``row_number()``); then, with the width the longest
    duration fixes (:func:`bin_width_ms`), the count in each bin."""
    steps = _Steps.of(_dialect(session))
    ms = steps.duration_ms
    conds = [*in_range(Job.created_at, start, end), ms >= 0]
    if plugin_id:
        conds.append(steps.plugin == plugin_id)
    if status:
        conds.append(steps.status == status)
    durations = select(ms.label("ms")).select_from(Job).join(steps.rows, true()).where(*conds).subquery("durations")
    ranked = select(durations.c.ms, func.row_number().over(order_by=durations.c.ms).label("rn"),
                    func.count().over().label("n")).subquery("ranked")

    def at_rank(percent: int) -> Any:
        rank = (ranked.c.n * percent + 99) // 100  # ceil(n * percent / 100) in whole numbers
        return func.max(case((ranked.c.rn == rank, ranked.c.ms)))

    row = session.execute(select(func.count(), func.avg(ranked.c.ms), func.min(ranked.c.ms), func.max(ranked.c.ms),
                                 *[at_rank(p) for p in PERCENTILES])).one()
    count = int(row[0])
    body: AnalyticsJobDurations = {  # one p<p>_seconds for each of PERCENTILES
        "count": count, "avg_seconds": None, "min_seconds": None, "max_seconds": None, "p50_seconds": None,
        "p90_seconds": None, "p99_seconds": None, "bins": [], "percentile_markers": []}
    if not count:
        return body
    low, high = int(row[2]), int(row[3])
    marks = {p: int(v) for p, v in zip(PERCENTILES, row[4:], strict=True)}
    body["avg_seconds"] = round(float(row[1]) / 1000, 6)
    body["min_seconds"], body["max_seconds"] = low / 1000, high / 1000
    body["p50_seconds"], body["p90_seconds"], body["p99_seconds"] = (marks[50] / 1000, marks[90] / 1000,
                                                                     marks[99] / 1000)
    width = bin_width_ms(high)
    last = BIN_COUNT - 1
    index = case((durations.c.ms >= literal_column(str(last * width)), literal_column(str(last))),
                 else_=durations.c.ms // literal_column(str(width), BigInteger()))
    counts = {int(i): int(n) for i, n in session.execute(select(index.label("bin"), func.count()).group_by(index))}
    body["bins"] = [{"label": bin_label(i, width), "count": int(counts.get(i, 0))} for i in range(BIN_COUNT)]
    body["percentile_markers"] = [{"label": f"p{p}", "bin_label": bin_label(min(v // width, last), width)}
                                  for p, v in marks.items()]
    return body


# --------------------------------------------------------------------------------------- AI usage

def ai_usage(session: Session, *, start: str | None = None, end: str | None = None, bucket: str | None = None,
             provider: str | None = None, model: str | None = None) -> AnalyticsAiUsage:
    """Input and output tokens of the requests to AI models per bucket of their ``created_at``,
    provider and model. A failed request is counted with its 0 tokens, so a model that was only
    tried still has its (zero) line."""
    size = check_bucket(bucket)
    conds = in_range(AiUsage.created_at, start, end)
    if provider:
        conds.append(AiUsage.provider == provider)
    if model:
        conds.append(AiUsage.model == model)
    day = day_of(_dialect(session), AiUsage.created_at)
    summed = (select(day.label("day"), AiUsage.provider, AiUsage.model,
                     func.sum(AiUsage.input_tokens).label("input_tokens"),
                     func.sum(AiUsage.output_tokens).label("output_tokens"))
              .where(*conds).group_by(day, AiUsage.provider, AiUsage.model).subquery("summed"))
    by = [bucket_of_day(_dialect(session), summed.c.day, size), summed.c.provider, summed.c.model]
    stmt = (select(*by, func.sum(summed.c.input_tokens), func.sum(summed.c.output_tokens)).group_by(*by)
            .order_by(*by))
    items: list[AiUsageItem] = [
        {"bucket": row[0], "provider": row[1], "model": row[2], "input_tokens": int(row[3]),
         "output_tokens": int(row[4])} for row in session.execute(stmt)]
    return {"bucket": size, "items": items}
