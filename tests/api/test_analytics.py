"""Analytics (spec *Analytics*) on data with chosen timestamps, on SQLite and PostgreSQL.

The timestamps straddle a month boundary (Sat 2024-11-30 / Sun 2024-12-01), an ISO-week boundary
at the turn of the year (Sun 2024-12-29 / Mon 2024-12-30) and a year boundary (2024-12-31 /
2025-01-01, one of them given as 00:30 at +02:00, i.e. 22:30 UTC the day before). Every
expected value below was worked out by hand from the table of moments, not by the code under test.
Rows whose times the API cannot set are written through the app's own database session.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import delete, event, update

from benchbook.cli.generated import load_document
from benchbook.domain.ids import new_id
from benchbook.persistence.tables import AiUsage, AuditEntry, Job, Record
from tests.api.helpers import make_collection, make_record, make_schema
from tests.conftest import Api

# Moment          UTC                    weekday  day         ISO week (Monday)  month
T1 = datetime(2024, 11, 30, 23, 59, 59, tzinfo=UTC)  # Sat 2024-11-30   2024-11-25   2024-11-01
T2 = datetime(2024, 12, 1, 0, 0, 0, tzinfo=UTC)  # Sun 2024-12-01   2024-11-25   2024-12-01
T3 = datetime(2024, 12, 29, 12, 0, 0, tzinfo=UTC)  # Sun 2024-12-29   2024-12-23   2024-12-01
T4 = datetime(2024, 12, 29, 23, 59, 59, 999000, tzinfo=UTC)  # Sun 2024-12-29   2024-12-23   2024-12-01
T5 = datetime(2024, 12, 30, 0, 0, 0, tzinfo=UTC)  # Mon 2024-12-30   2024-12-30   2024-12-01
T6 = datetime(2025, 1, 1, 0, 30, 0, tzinfo=timezone(timedelta(hours=2)))  # = Tue 2024-12-31 22:30 UTC
T7 = datetime(2025, 1, 1, 0, 0, 0, tzinfo=UTC)  # Wed 2025-01-01   2024-12-30   2025-01-01

PARAMS = {"start", "end", "bucket", "action", "entity_type", "dataset", "schema", "status", "trigger",
          "workflow_id", "plugin_id", "provider", "model"}


def get(api: Api, path: str, **params: Any) -> Any:
    return api.ok("GET", "/analytics/" + path, params=params)


@contextmanager
def statements(api: Api) -> Iterator[list[str]]:
    """The SQL statements the app's engine runs inside the block."""
    seen: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        seen.append(statement)

    engine = api.app.services.db.engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", count)


# ------------------------------------------------------------------------------------ records

@pytest.fixture
def records(api: Api) -> dict[str, str]:
    """lab/site at T1, T2, T3; lab/sample at T4, T5 (T5's deleted afterwards); field/sample at T6, T7."""
    make_schema(api, "site")
    make_schema(api, "sample")
    make_collection(api, "lab", ["site", "sample"])
    make_collection(api, "field", ["sample"])
    made = {name: make_record(api, coll, schema)["id"] for name, coll, schema in [
        ("r1", "lab", "site"), ("r2", "lab", "site"), ("r3", "lab", "site"), ("r4", "lab", "sample"),
        ("r5", "lab", "sample"), ("r6", "field", "sample"), ("r7", "field", "sample")]}
    with api.app.services.db.session() as s, s.begin():
        for name, at in zip(made, [T1, T2, T3, T4, T5, T6, T7], strict=True):
            s.execute(update(Record).where(Record.id == made[name]).values(created_at=at))
    api.ok("DELETE", f"/records/{made['r5']}", 204)
    return made


def test_records_counts_are_live_records_by_collection_and_schema(api: Api, records: dict[str, str]) -> None:
    assert get(api, "records/counts") == {"items": [
        {"dataset": "field", "schema_name": "sample", "count": 2},
        {"dataset": "lab", "schema_name": "sample", "count": 1},  # r5 is deleted
        {"dataset": "lab", "schema_name": "site", "count": 3}]}
    assert get(api, "records/counts", dataset="field")["items"] == [
        {"dataset": "field", "schema_name": "sample", "count": 2}]
    assert get(api, "records/counts", schema="sample")["items"] == [
        {"dataset": "field", "schema_name": "sample", "count": 2},
        {"dataset": "lab", "schema_name": "sample", "count": 1}]
    assert get(api, "records/counts", dataset="lab", schema="site")["items"] == [
        {"dataset": "lab", "schema_name": "site", "count": 3}]
    assert get(api, "records/counts", dataset="nowhere")["items"] == []


def test_records_counts_ignore_what_they_do_not_apply(api: Api, records: dict[str, str]) -> None:
    everything = get(api, "records/counts")
    ignored = {"start": "not a date", "end": "2000-01-01", "bucket": "month", "action": "nonsense",
               "entity_type": "x", "status": "x", "trigger": "x", "workflow_id": "x", "plugin_id": "x",
               "provider": "x", "model": "x"}
    assert get(api, "records/counts", **ignored) == everything


def test_records_growth_by_day_week_and_month(api: Api, records: dict[str, str]) -> None:
    # r5 was deleted, but it was created: growth counts it
    assert get(api, "records/growth", bucket="day") == {"bucket": "day", "items": [
        {"bucket": "2024-11-30", "dataset": "lab", "schema_name": "site", "count": 1},
        {"bucket": "2024-12-01", "dataset": "lab", "schema_name": "site", "count": 1},
        {"bucket": "2024-12-29", "dataset": "lab", "schema_name": "sample", "count": 1},
        {"bucket": "2024-12-29", "dataset": "lab", "schema_name": "site", "count": 1},
        {"bucket": "2024-12-30", "dataset": "lab", "schema_name": "sample", "count": 1},
        {"bucket": "2024-12-31", "dataset": "field", "schema_name": "sample", "count": 1},
        {"bucket": "2025-01-01", "dataset": "field", "schema_name": "sample", "count": 1}]}
    assert get(api, "records/growth", bucket="week") == {"bucket": "week", "items": [
        {"bucket": "2024-11-25", "dataset": "lab", "schema_name": "site", "count": 2},
        {"bucket": "2024-12-23", "dataset": "lab", "schema_name": "sample", "count": 1},
        {"bucket": "2024-12-23", "dataset": "lab", "schema_name": "site", "count": 1},
        {"bucket": "2024-12-30", "dataset": "field", "schema_name": "sample", "count": 2},
        {"bucket": "2024-12-30", "dataset": "lab", "schema_name": "sample", "count": 1}]}
    assert get(api, "records/growth", bucket="month") == {"bucket": "month", "items": [
        {"bucket": "2024-11-01", "dataset": "lab", "schema_name": "site", "count": 1},
        {"bucket": "2024-12-01", "dataset": "field", "schema_name": "sample", "count": 1},
        {"bucket": "2024-12-01", "dataset": "lab", "schema_name": "sample", "count": 2},
        {"bucket": "2024-12-01", "dataset": "lab", "schema_name": "site", "count": 2},
        {"bucket": "2025-01-01", "dataset": "field", "schema_name": "sample", "count": 1}]}
    assert get(api, "records/growth")["bucket"] == "day"  # the default


def test_records_growth_filters_and_range(api: Api, records: dict[str, str]) -> None:
    assert get(api, "records/growth", bucket="month", dataset="lab", schema="site")["items"] == [
        {"bucket": "2024-11-01", "dataset": "lab", "schema_name": "site", "count": 1},
        {"bucket": "2024-12-01", "dataset": "lab", "schema_name": "site", "count": 2}]
    # start inclusive, end exclusive; a date is its midnight UTC: T2, T3, T4 (T5 is the end itself)
    assert get(api, "records/growth", bucket="month", start="2024-12-01", end="2024-12-30")["items"] == [
        {"bucket": "2024-12-01", "dataset": "lab", "schema_name": "sample", "count": 1},
        {"bucket": "2024-12-01", "dataset": "lab", "schema_name": "site", "count": 2}]
    # a time with no zone is UTC: from T3 on, before T5
    assert get(api, "records/growth", bucket="week", start="2024-12-29T12:00:00",
               end="2024-12-30T00:00:00")["items"] == [
        {"bucket": "2024-12-23", "dataset": "lab", "schema_name": "sample", "count": 1},
        {"bucket": "2024-12-23", "dataset": "lab", "schema_name": "site", "count": 1}]
    # a zone is honoured: 2024-12-30T01:00+02:00 is 2024-12-29T23:00Z, so T4 is in and T3 is out;
    # 2025-01-01T01:00:00+01:00 is T7 itself, excluded
    assert get(api, "records/growth", bucket="day", start="2024-12-30T01:00:00+02:00",
               end="2025-01-01T01:00:00+01:00")["items"] == [
        {"bucket": "2024-12-29", "dataset": "lab", "schema_name": "sample", "count": 1},
        {"bucket": "2024-12-30", "dataset": "lab", "schema_name": "sample", "count": 1},
        {"bucket": "2024-12-31", "dataset": "field", "schema_name": "sample", "count": 1}]
    assert get(api, "records/growth", start="2025-01-01T00:00:00Z")["items"] == [
        {"bucket": "2025-01-01", "dataset": "field", "schema_name": "sample", "count": 1}]


def test_empty_ranges_give_empty_items(api: Api, records: dict[str, str]) -> None:
    assert get(api, "records/growth", start="2030-01-01") == {"bucket": "day", "items": []}
    assert get(api, "records/growth", start="2025-01-01", end="2024-01-01") == {"bucket": "day", "items": []}
    assert get(api, "records/growth", start="2024-12-30", end="2024-12-30", bucket="week")["items"] == []
    assert get(api, "audit/events", start="2030-01-01")["items"] == []
    assert get(api, "jobs/status", end="2000-01-01")["items"] == []
    assert get(api, "jobs/by-trigger", end="2000-01-01") == {"items": []}
    assert get(api, "jobs/failures-by-plugin", end="2000-01-01")["items"] == []
    assert get(api, "jobs/duration", end="2000-01-01") == {
        "count": 0, "avg_seconds": None, "min_seconds": None, "max_seconds": None, "p50_seconds": None,
        "p90_seconds": None, "p99_seconds": None, "bins": [], "percentile_markers": []}


def test_an_empty_project_gives_empty_items(api: Api) -> None:
    assert get(api, "records/counts") == {"items": []}
    assert get(api, "records/growth", bucket="week") == {"bucket": "week", "items": []}
    assert get(api, "jobs/duration")["count"] == 0


def test_growth_ignores_what_it_does_not_apply(api: Api, records: dict[str, str]) -> None:
    applied = get(api, "records/growth", bucket="week", dataset="lab")
    assert get(api, "records/growth", bucket="week", dataset="lab", action="nonsense", entity_type="x",
               status="x", trigger="x", workflow_id="x", plugin_id="x", provider="x", model="x") == applied


# ------------------------------------------------------------------------------ parameters

@pytest.mark.parametrize("path", ["records/growth", "audit/events", "jobs/status", "jobs/failures-by-plugin",
                                  "ai/usage", "records/counts", "jobs/by-trigger", "jobs/duration"])
def test_a_bucket_outside_the_enum_is_422(api: Api, path: str) -> None:
    r = api.get("/analytics/" + path, params={"bucket": "year"})
    assert r.status_code == 422, r.text


@pytest.mark.parametrize(("path", "name"), [("records/growth", "start"), ("audit/events", "end"),
                                            ("jobs/duration", "start"), ("jobs/by-trigger", "end"),
                                            ("ai/usage", "start")])
def test_a_start_or_end_that_is_not_iso_8601_is_422(api: Api, path: str, name: str) -> None:
    """The document's pattern refuses it (so a client can check it before sending), an
    impossible day too."""
    for value in ("yesterday", "2023-02-29"):
        r = api.get("/analytics/" + path, params={name: value})
        assert r.status_code == 422, r.text
        assert r.json()["errors"][0]["loc"] == ["query", name]


@pytest.mark.parametrize("path", ["records/growth", "audit/events", "jobs/duration", "ai/usage"])
def test_a_start_or_end_past_year_9999_in_utc_is_later_than_everything(api: Api, path: str) -> None:
    late = "9999-12-31T23:00:00-05:00"  # in year 10000 in UTC, which Python's datetime cannot hold
    assert api.get("/analytics/" + path, params={"start": late}).status_code == 200
    assert api.get("/analytics/" + path, params={"end": late}).json() == api.get("/analytics/" + path).json()


def test_every_endpoint_declares_every_analytics_parameter() -> None:
    """The spec: all analytics endpoints accept the same query parameters (strict validation would
    refuse one not declared), each applying only its own."""
    document = load_document()
    parameters = document["components"]["parameters"]
    paths = [path for path in document["paths"] if path.startswith("/analytics/")]
    assert len(paths) == 8
    for path in paths:
        names = {parameters[p["$ref"].rsplit("/", 1)[1]]["name"] for p in document["paths"][path]["get"]["parameters"]}
        assert names == PARAMS, path


# --------------------------------------------------------------------------------------- audit

def add_entries(api: Api, entries: list[tuple[datetime, str, str]]) -> None:
    """Replace the history with these entries (moment, action, entity type)."""
    with api.app.services.db.session() as s, s.begin():
        s.execute(delete(AuditEntry))
        s.add_all([AuditEntry(id=new_id(), action=action, entity_type=kind, entity_id=new_id(), timestamp=at)
                   for at, action, kind in entries])


@pytest.fixture
def entries(api: Api) -> None:
    add_entries(api, [(T1, "create", "record"), (T2, "create", "record"), (T3, "update", "record"),
                      (T4, "delete", "dataset"), (T5, "create", "schema"), (T6, "create", "record"),
                      (T7, "update", "record")])


def test_audit_events_by_week_and_month(api: Api, entries: None) -> None:
    assert get(api, "audit/events", bucket="week") == {"bucket": "week", "items": [
        {"bucket": "2024-11-25", "action": "create", "entity_type": "record", "count": 2},
        {"bucket": "2024-12-23", "action": "delete", "entity_type": "dataset", "count": 1},
        {"bucket": "2024-12-23", "action": "update", "entity_type": "record", "count": 1},
        {"bucket": "2024-12-30", "action": "create", "entity_type": "record", "count": 1},
        {"bucket": "2024-12-30", "action": "create", "entity_type": "schema", "count": 1},
        {"bucket": "2024-12-30", "action": "update", "entity_type": "record", "count": 1}]}
    assert get(api, "audit/events", bucket="month")["items"] == [
        {"bucket": "2024-11-01", "action": "create", "entity_type": "record", "count": 1},
        {"bucket": "2024-12-01", "action": "create", "entity_type": "record", "count": 2},
        {"bucket": "2024-12-01", "action": "create", "entity_type": "schema", "count": 1},
        {"bucket": "2024-12-01", "action": "delete", "entity_type": "dataset", "count": 1},
        {"bucket": "2024-12-01", "action": "update", "entity_type": "record", "count": 1},
        {"bucket": "2025-01-01", "action": "update", "entity_type": "record", "count": 1}]


def test_audit_events_filters_and_range(api: Api, entries: None) -> None:
    assert get(api, "audit/events", action="create", entity_type="record")["items"] == [
        {"bucket": "2024-11-30", "action": "create", "entity_type": "record", "count": 1},
        {"bucket": "2024-12-01", "action": "create", "entity_type": "record", "count": 1},
        {"bucket": "2024-12-31", "action": "create", "entity_type": "record", "count": 1}]
    assert get(api, "audit/events", bucket="month", action="update", start="2024-12-29T12:00:00Z",
               end="2025-01-01")["items"] == [
        {"bucket": "2024-12-01", "action": "update", "entity_type": "record", "count": 1}]
    assert get(api, "audit/events", entity_type="view")["items"] == []
    # dataset and schema are not audit/events parameters: ignored
    assert get(api, "audit/events", bucket="week", dataset="x", schema="y", status="z") == get(
        api, "audit/events", bucket="week")


def test_audit_events_count_real_changes(api: Api) -> None:
    make_schema(api, "site")
    make_collection(api, "lab", ["site"])
    record = make_record(api, "lab", "site")
    api.ok("DELETE", f"/records/{record['id']}", 204)
    today = datetime.now(UTC).date().isoformat()
    items = get(api, "audit/events", start=today)["items"]
    assert {(i["action"], i["entity_type"]): i["count"] for i in items} == {
        ("create", "schema"): 1, ("create", "dataset"): 1, ("create", "record"): 1, ("delete", "record"): 1}
    assert {i["bucket"] for i in items} == {today}


# ---------------------------------------------------------------------------------------- runs

def step(plugin: str, status: str, ms: int | None) -> dict[str, Any]:
    return {"step_id": plugin.rsplit(".", 1)[-1], "plugin": plugin, "status": status, "started_at": None,
            "finished_at": None, "duration_ms": ms, "error": None, "problems": None}


STATS = "benchbook.text-stats"

RUNS = [  # moment, workflow, trigger, status, step executions
    (T1, "stats", "record_created", "completed", [step(STATS, "completed", 1200), step("gate", "completed", 300)]),
    (T3, "stats", "manual", "failed", [step(STATS, "completed", 100), step("gate", "failed", 4000)]),
    (T5, "other", "record_updated", "failed", [step("gate", "failed", 50)]),
    (T6, "stats", "record_created", "cancelled", [step(STATS, "completed", 700), step("gate", "cancelled", None)]),
    (T7, "other", "manual", "pending", None),
    (T7, "other", "record_created", "failed", ["not a step", step(STATS, "failed", 10)]),
]
# durations with a value: 10, 50, 100, 300, 700, 1200, 4000 ms (7 steps)


def add_runs(api: Api, runs: list[tuple[datetime, str, str, str, Any]]) -> None:
    with api.app.services.db.session() as s, s.begin():
        s.add_all([Job(id=new_id(), workflow_name=wf, record_id=new_id(), schema_name="sample", trigger=trigger,
                       status=status, step_executions=steps, created_at=at)
                   for at, wf, trigger, status, steps in runs])


@pytest.fixture
def runs(api: Api) -> None:
    add_runs(api, RUNS)


def test_jobs_by_trigger_is_a_snapshot_over_the_range(api: Api, runs: None) -> None:
    assert get(api, "jobs/by-trigger") == {"items": [
        {"trigger": "manual", "count": 2}, {"trigger": "record_created", "count": 3},
        {"trigger": "record_updated", "count": 1}]}
    assert get(api, "jobs/by-trigger", workflow_id="stats")["items"] == [
        {"trigger": "manual", "count": 1}, {"trigger": "record_created", "count": 2}]
    assert get(api, "jobs/by-trigger", status="failed")["items"] == [
        {"trigger": "manual", "count": 1}, {"trigger": "record_created", "count": 1},
        {"trigger": "record_updated", "count": 1}]
    assert get(api, "jobs/by-trigger", trigger="manual")["items"] == [{"trigger": "manual", "count": 2}]
    assert get(api, "jobs/by-trigger", start="2024-12-30", bucket="month")["items"] == [
        {"trigger": "manual", "count": 1}, {"trigger": "record_created", "count": 2},
        {"trigger": "record_updated", "count": 1}]
    assert get(api, "jobs/by-trigger", start="2025-01-01T00:00:00", end="2025-01-01T00:00:00")["items"] == []


def test_jobs_status_by_day_week_and_month(api: Api, runs: None) -> None:
    assert get(api, "jobs/status") == {"bucket": "day", "items": [
        {"bucket": "2024-11-30", "status": "completed", "count": 1},
        {"bucket": "2024-12-29", "status": "failed", "count": 1},
        {"bucket": "2024-12-30", "status": "failed", "count": 1},
        {"bucket": "2024-12-31", "status": "cancelled", "count": 1},
        {"bucket": "2025-01-01", "status": "failed", "count": 1},
        {"bucket": "2025-01-01", "status": "pending", "count": 1}]}
    assert get(api, "jobs/status", bucket="week")["items"] == [
        {"bucket": "2024-11-25", "status": "completed", "count": 1},
        {"bucket": "2024-12-23", "status": "failed", "count": 1},
        {"bucket": "2024-12-30", "status": "cancelled", "count": 1},
        {"bucket": "2024-12-30", "status": "failed", "count": 2},
        {"bucket": "2024-12-30", "status": "pending", "count": 1}]
    assert get(api, "jobs/status", bucket="month")["items"] == [
        {"bucket": "2024-11-01", "status": "completed", "count": 1},
        {"bucket": "2024-12-01", "status": "cancelled", "count": 1},
        {"bucket": "2024-12-01", "status": "failed", "count": 2},
        {"bucket": "2025-01-01", "status": "failed", "count": 1},
        {"bucket": "2025-01-01", "status": "pending", "count": 1}]


def test_jobs_status_filters(api: Api, runs: None) -> None:
    assert get(api, "jobs/status", bucket="week", trigger="manual")["items"] == [
        {"bucket": "2024-12-23", "status": "failed", "count": 1},
        {"bucket": "2024-12-30", "status": "pending", "count": 1}]
    assert get(api, "jobs/status", bucket="month", workflow_id="other", status="failed")["items"] == [
        {"bucket": "2024-12-01", "status": "failed", "count": 1},
        {"bucket": "2025-01-01", "status": "failed", "count": 1}]
    assert get(api, "jobs/status", bucket="month", plugin_id="gate", dataset="x") == get(
        api, "jobs/status", bucket="month")  # not jobs/status parameters: ignored


def test_failures_by_plugin_count_failed_steps(api: Api, runs: None) -> None:
    assert get(api, "jobs/failures-by-plugin") == {"bucket": "day", "items": [
        {"bucket": "2024-12-29", "plugin": "gate", "count": 1},
        {"bucket": "2024-12-30", "plugin": "gate", "count": 1},
        {"bucket": "2025-01-01", "plugin": STATS, "count": 1}]}
    assert get(api, "jobs/failures-by-plugin", bucket="week")["items"] == [
        {"bucket": "2024-12-23", "plugin": "gate", "count": 1},
        {"bucket": "2024-12-30", "plugin": STATS, "count": 1},
        {"bucket": "2024-12-30", "plugin": "gate", "count": 1}]
    assert get(api, "jobs/failures-by-plugin", bucket="month")["items"] == [
        {"bucket": "2024-12-01", "plugin": "gate", "count": 2},
        {"bucket": "2025-01-01", "plugin": STATS, "count": 1}]
    assert get(api, "jobs/failures-by-plugin", bucket="month", plugin_id="gate")["items"] == [
        {"bucket": "2024-12-01", "plugin": "gate", "count": 2}]
    assert get(api, "jobs/failures-by-plugin", bucket="month", end="2024-12-30")["items"] == [
        {"bucket": "2024-12-01", "plugin": "gate", "count": 1}]
    # the run's status is not a parameter here: ignored (J2's run failed, its gate step failed)
    assert get(api, "jobs/failures-by-plugin", status="completed", workflow_id="x")["items"] == get(
        api, "jobs/failures-by-plugin")["items"]


def bins(width_s: float, counts: dict[int, int]) -> list[dict[str, Any]]:
    def text(x: float) -> str:
        return f"{x:.3f}".rstrip("0").rstrip(".")
    return [{"label": f"{text(i * width_s)}-{text((i + 1) * width_s)}s", "count": counts.get(i, 0)}
            for i in range(10)]


def test_jobs_duration_over_every_step(api: Api, runs: None) -> None:
    # 10, 50, 100, 300, 700, 1200, 4000 ms: mean 6360/7; nearest rank: p50 the 4th (300), p90 and
    # p99 the 7th; the longest, 4 s, rounds up to 5 s: ten bins of 0.5 s
    assert get(api, "jobs/duration") == {
        "count": 7, "avg_seconds": 0.908571, "min_seconds": 0.01, "max_seconds": 4.0,
        "p50_seconds": 0.3, "p90_seconds": 4.0, "p99_seconds": 4.0,
        "bins": bins(0.5, {0: 4, 1: 1, 2: 1, 8: 1}),
        "percentile_markers": [{"label": "p50", "bin_label": "0-0.5s"}, {"label": "p90", "bin_label": "4-4.5s"},
                               {"label": "p99", "bin_label": "4-4.5s"}]}
    assert bins(0.5, {})[9]["label"] == "4.5-5s"


def test_jobs_duration_matches_the_steps_own_status_and_plugin(api: Api, runs: None) -> None:
    # failed steps: 4000 (J2), 50 (J3), 10 (J6); J3's and J6's runs failed too, J2's step is what counts
    failed = get(api, "jobs/duration", status="failed")
    assert {k: v for k, v in failed.items() if k.endswith("seconds") or k == "count"} == {
        "count": 3, "avg_seconds": 1.353333, "min_seconds": 0.01, "max_seconds": 4.0,
        "p50_seconds": 0.05, "p90_seconds": 4.0, "p99_seconds": 4.0}
    # a step's status, not the run's: the completed steps of failed runs count as completed
    assert get(api, "jobs/duration", status="completed")["count"] == 4  # 1200, 300, 100, 700
    assert get(api, "jobs/duration", status="cancelled")["count"] == 0  # it never ran: no duration
    # text-stats: 1200, 100, 700, 10 ms; the longest, 1.2 s, rounds up to 2 s: bins of 0.2 s
    assert get(api, "jobs/duration", plugin_id=STATS) == {
        "count": 4, "avg_seconds": 0.5025, "min_seconds": 0.01, "max_seconds": 1.2,
        "p50_seconds": 0.1, "p90_seconds": 1.2, "p99_seconds": 1.2,
        "bins": bins(0.2, {0: 2, 3: 1, 6: 1}),
        "percentile_markers": [{"label": "p50", "bin_label": "0-0.2s"}, {"label": "p90", "bin_label": "1.2-1.4s"},
                               {"label": "p99", "bin_label": "1.2-1.4s"}]}
    assert get(api, "jobs/duration", plugin_id=STATS, status="failed")["count"] == 1
    # from T5 on: J3 (50), J4 (700), J6 (10); trigger and workflow are not duration parameters
    ranged = get(api, "jobs/duration", start="2024-12-30", trigger="manual", workflow_id="nope")
    assert (ranged["count"], ranged["max_seconds"], ranged["p50_seconds"]) == (3, 0.7, 0.05)
    assert ranged["bins"] == bins(0.1, {0: 2, 7: 1})  # 0.7 s rounds up to 1 s; 700 ms opens bin 7


def test_jobs_duration_bins_close_on_the_longest(api: Api) -> None:
    add_runs(api, [(T1, "w", "manual", "completed", [step("p", "completed", 1000), step("p", "completed", 0)])])
    body = get(api, "jobs/duration")
    assert body["bins"] == bins(0.1, {0: 1, 9: 1})  # 1 s exactly is in the last bin, 0.9-1s
    assert body["percentile_markers"] == [{"label": "p50", "bin_label": "0-0.1s"},
                                          {"label": "p90", "bin_label": "0.9-1s"},
                                          {"label": "p99", "bin_label": "0.9-1s"}]
    add_runs(api, [(T2, "w", "manual", "completed", [step("p", "completed", 0)])])
    body = get(api, "jobs/duration", start="2024-12-01")
    assert (body["count"], body["max_seconds"], body["bins"][0]) == (1, 0.0, {"label": "0-0.001s", "count": 1})


# ------------------------------------------------------------------------------------ AI usage

def add_usage(api: Api, rows: list[tuple[datetime, str, str, int, int, bool]]) -> None:
    with api.app.services.db.session() as s, s.begin():
        s.add_all([AiUsage(id=new_id(), provider=provider, model=model, input_tokens=i, output_tokens=o,
                           total_tokens=i + o, ok=ok, error_kind=None if ok else "timeout", created_at=at)
                   for at, provider, model, i, o, ok in rows])


@pytest.fixture
def usage(api: Api) -> None:
    add_usage(api, [
        (T1, "anthropic", "claude-a", 100, 10, True),
        (T2, "anthropic", "claude-a", 200, 20, True),
        (T3, "local", "llama", 5, 1, True),
        (T4, "anthropic", "claude-a", 0, 0, False),  # failed: counted with its 0 tokens
        (T5, "anthropic", "claude-b", 1000, 100, True),
        (T6, "anthropic", "claude-a", 7, 3, True),
        (T7, "local", "llama", 50, 5, True),
    ])


def test_ai_usage_by_day_week_and_month(api: Api, usage: None) -> None:
    assert get(api, "ai/usage") == {"bucket": "day", "items": [
        {"bucket": "2024-11-30", "provider": "anthropic", "model": "claude-a", "input_tokens": 100, "output_tokens": 10},
        {"bucket": "2024-12-01", "provider": "anthropic", "model": "claude-a", "input_tokens": 200, "output_tokens": 20},
        {"bucket": "2024-12-29", "provider": "anthropic", "model": "claude-a", "input_tokens": 0, "output_tokens": 0},
        {"bucket": "2024-12-29", "provider": "local", "model": "llama", "input_tokens": 5, "output_tokens": 1},
        {"bucket": "2024-12-30", "provider": "anthropic", "model": "claude-b", "input_tokens": 1000,
         "output_tokens": 100},
        {"bucket": "2024-12-31", "provider": "anthropic", "model": "claude-a", "input_tokens": 7, "output_tokens": 3},
        {"bucket": "2025-01-01", "provider": "local", "model": "llama", "input_tokens": 50, "output_tokens": 5}]}
    assert get(api, "ai/usage", bucket="week")["items"] == [
        {"bucket": "2024-11-25", "provider": "anthropic", "model": "claude-a", "input_tokens": 300, "output_tokens": 30},
        {"bucket": "2024-12-23", "provider": "anthropic", "model": "claude-a", "input_tokens": 0, "output_tokens": 0},
        {"bucket": "2024-12-23", "provider": "local", "model": "llama", "input_tokens": 5, "output_tokens": 1},
        {"bucket": "2024-12-30", "provider": "anthropic", "model": "claude-a", "input_tokens": 7, "output_tokens": 3},
        {"bucket": "2024-12-30", "provider": "anthropic", "model": "claude-b", "input_tokens": 1000,
         "output_tokens": 100},
        {"bucket": "2024-12-30", "provider": "local", "model": "llama", "input_tokens": 50, "output_tokens": 5}]
    assert get(api, "ai/usage", bucket="month")["items"] == [
        {"bucket": "2024-11-01", "provider": "anthropic", "model": "claude-a", "input_tokens": 100, "output_tokens": 10},
        {"bucket": "2024-12-01", "provider": "anthropic", "model": "claude-a", "input_tokens": 207, "output_tokens": 23},
        {"bucket": "2024-12-01", "provider": "anthropic", "model": "claude-b", "input_tokens": 1000,
         "output_tokens": 100},
        {"bucket": "2024-12-01", "provider": "local", "model": "llama", "input_tokens": 5, "output_tokens": 1},
        {"bucket": "2025-01-01", "provider": "local", "model": "llama", "input_tokens": 50, "output_tokens": 5}]


def test_ai_usage_filters_and_range(api: Api, usage: None) -> None:
    assert get(api, "ai/usage", bucket="month", provider="local")["items"] == [
        {"bucket": "2024-12-01", "provider": "local", "model": "llama", "input_tokens": 5, "output_tokens": 1},
        {"bucket": "2025-01-01", "provider": "local", "model": "llama", "input_tokens": 50, "output_tokens": 5}]
    assert get(api, "ai/usage", bucket="week", model="claude-a", start="2024-12-01", end="2024-12-31")["items"] == [
        {"bucket": "2024-11-25", "provider": "anthropic", "model": "claude-a", "input_tokens": 200, "output_tokens": 20},
        {"bucket": "2024-12-23", "provider": "anthropic", "model": "claude-a", "input_tokens": 0, "output_tokens": 0}]
    assert get(api, "ai/usage", start="2030-01-01") == {"bucket": "day", "items": []}
    # not ai/usage parameters: ignored
    assert get(api, "ai/usage", bucket="month", dataset="x", action="y", plugin_id="z") == get(
        api, "ai/usage", bucket="month")


# ----------------------------------------------------------------------------- query budget

@pytest.mark.parametrize(("path", "params", "most"), [
    ("records/counts", {}, 1), ("records/growth", {"bucket": "week"}, 1), ("audit/events", {"bucket": "month"}, 1),
    ("jobs/by-trigger", {}, 1), ("jobs/status", {}, 1), ("jobs/failures-by-plugin", {}, 1),
    ("jobs/duration", {}, 2), ("ai/usage", {"bucket": "week"}, 1)])
def test_one_or_two_queries_however_many_rows(api: Api, records: dict[str, str], path: str,
                                              params: dict[str, str], most: int) -> None:
    add_runs(api, RUNS * 20)
    add_usage(api, [(T1 + timedelta(days=i), "local", f"m{i % 3}", i, 1, True) for i in range(60)])
    with statements(api) as seen:
        get(api, path, **params)
    assert len(seen) == most, seen
