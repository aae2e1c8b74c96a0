"""The run list (spec *Run list filters*, *Limits*): filters, the run filter tree, sort and
pages, counts, failure groups, and rerun and delete by ids or filter with their limits."""
from __future__ import annotations

import json
from typing import Any

import pytest

from benchbook.persistence.tables import Job, utcnow
from benchbook.runner import queue
from tests.runner.automation_helpers import STATS, auto, clear_automation, kept, make_lab, runs, workflow

__all__ = ["auto"]  # fixtures

FAILS = {"record_schema": "sample", "triggers": {"manual": {}},
         "steps": [{"id": "site", "plugin": "benchbook.text-stats", "inputs": {"text": "record.site"}}]}


def make_history(api: Any, auto: dict[str, Any]) -> dict[str, Any]:
    """Runs of three kinds in the lab ``auto`` (:func:`make_lab`): count-words for three records
    (created), then by hand for one; ``fails`` by hand for two records without a site (failed)
    and one with (completed). Returns the three records."""
    workflow(api, "count-words", STATS)
    workflow(api, "fails", FAILS)
    a, b, c = (auto["make"]({"notes": n}) for n in ("a", "b b", "c c c"))
    api.ok("POST", "/jobs/drain")
    api.ok("POST", "/workflows/count-words/run", 201, json={"record_id": a["id"]})
    for rec in (a, b):
        api.ok("POST", "/workflows/fails/run", 201, json={"record_id": rec["id"]})
    api.ok("PATCH", f"/records/{c['id']}", json={"data": {"site": "North"}})
    api.ok("POST", "/workflows/fails/run", 201, json={"record_id": c["id"]})
    api.ok("POST", "/jobs/drain")
    return {"a": a, "b": b, "c": c}


@pytest.fixture
def history(api: Any, auto: dict[str, Any]) -> dict[str, Any]:
    """:func:`make_history`'s runs, for a test that changes them."""
    return make_history(api, auto)


def _kept_history(api: Any) -> dict[str, Any]:
    made = make_history(api, make_lab(api))
    clear_automation(api)  # no workflow file outlives the build: later tests' records start nothing
    return made


def _runs_now(api: Any) -> Any:
    return api.ok("GET", "/jobs", params={"limit": 500})


@pytest.fixture
def seen(backend_app: Any) -> tuple[Any, dict[str, Any]]:
    """The app and :func:`make_history`'s records, for tests that only read the runs: built once
    per backend, and again when another test changed the run list (every other test empties the
    tables first)."""
    return backend_app, kept(backend_app, "test_jobs_list.history", _kept_history, _runs_now)


def ids(items: list[dict[str, Any]]) -> set[str]:
    return {j["id"] for j in items}


def test_the_run_list_filters(seen: tuple[Any, dict[str, Any]]) -> None:
    api, history = seen
    every = runs(api)
    assert len(every) == 7 and api.ok("GET", "/jobs/count") == {"count": 7}
    a = history["a"]["id"]

    def listed(**params: Any) -> list[dict[str, Any]]:
        found = api.ok("GET", "/jobs", params=params)
        assert api.ok("GET", "/jobs/count", params=params) == {"count": len(found)}
        return found  # type: ignore[no-any-return]
    assert {j["workflow_name"] for j in listed(workflow="fails")} == {"fails"} and len(listed(workflow="fails")) == 3
    assert listed(workflow="fail") == []  # exactly this name
    assert len(listed(status="failed")) == 2 and len(listed(status="completed")) == 5
    assert len(listed(trigger="manual")) == 4 and len(listed(trigger="record_created")) == 3
    assert {j["record_id"] for j in listed(record_id=a)} == {a} and len(listed(record_id=a.lower())) == 3
    assert {j["workflow_name"] for j in listed(affected_record_id=a)} == {"count-words"}  # fails saves nothing
    # the second count-words run of a found nothing to change: it affected no record
    assert len(listed(affected_record_id=a)) == 1 and len(listed(affected_schema="sample")) == 3
    assert listed(affected_schema="study") == []
    assert len(listed(search="COUNT")) == 4  # the workflow's name, any case
    assert len(listed(search="'text' is required")) == 2  # the error's text
    assert len(listed(search="fails", status="failed", record_id=a)) == 1


@pytest.mark.parametrize(("tree", "expected"), [
    ({"field": "status", "op": "in", "value": ["failed", "cancelled"]}, 2),
    ({"field": "workflow_name", "op": "contains", "value": "WORD"}, 4),
    ({"and": [{"field": "trigger", "op": "eq", "value": "manual"}, {"field": "status", "op": "ne",
                                                                    "value": "failed"}]}, 2),
    ({"field": "error_kind", "op": "eq", "value": "invalid_input"}, 2),
    ({"field": "failed_step", "op": "is_null"}, 5),
    ({"field": "error", "op": "contains", "value": "required"}, 2),
    ({"field": "depth", "op": "gte", "value": 1}, 0),
    ({"field": "problems", "op": "eq", "value": 0}, 7),
    ({"or": [{"field": "schema_name", "op": "eq", "value": "study"}, {"field": "created_at", "op": "gt",
                                                                      "value": "2000-01-01"}]}, 7),
    ({"field": "finished_at", "op": "is_null", "value": False}, 7),
    ({"field": "started_at", "op": "lt", "value": "2000-01-01T00:00:00"}, 0),
])
def test_the_run_filter_tree(seen: tuple[Any, dict[str, Any]], tree: dict[str, Any], expected: int) -> None:
    api, _ = seen
    assert api.ok("GET", "/jobs/count", params={"filter": json.dumps(tree)})["count"] == expected
    assert len(api.ok("GET", "/jobs", params={"filter": json.dumps(tree)})) == expected


@pytest.mark.parametrize(("filter_text", "words"), [
    ("{nope", "invalid JSON"),
    (json.dumps({"field": "colour", "op": "eq", "value": "red"}), "unknown field 'colour'"),
    (json.dumps({"field": "status", "op": "gt", "value": "a"}), "operator 'gt' does not apply"),
    (json.dumps({"field": "depth", "op": "eq", "value": "one"}), "must be a number"),
    (json.dumps({"field": "created_at", "op": "gt", "value": "yesterday"}), "ISO 8601"),
    (json.dumps({"and": []}), "non-empty list"),
    (json.dumps({"field": "status", "op": "in", "value": "failed"}), "list of strings"),
])
def test_a_bad_filter_tree_is_a_422_naming_the_problem(seen: tuple[Any, dict[str, Any]], filter_text: str,
                                                         words: str) -> None:
    api, _ = seen
    for path in ("/jobs", "/jobs/count", "/jobs/failure-groups"):
        r = api.get(path, params={"filter": filter_text})
        assert r.status_code == 422 and words in r.json()["detail"], (path, r.text)
        assert r.json()["errors"][0]["loc"][:2] == ["query", "filter"]


def test_sort_and_pages(seen: tuple[Any, dict[str, Any]]) -> None:
    api, _ = seen
    newest = api.ok("GET", "/jobs")
    assert [j["created_at"] for j in newest] == sorted((j["created_at"] for j in newest), reverse=True)
    by_name = api.ok("GET", "/jobs", params={"sort": "workflow_name"})
    assert [j["workflow_name"] for j in by_name] == ["count-words"] * 4 + ["fails"] * 3
    assert next(j["workflow_name"] for j in api.ok("GET", "/jobs", params={"sort": "workflow_name:desc"})) == "fails"
    assert [j["status"] for j in api.ok("GET", "/jobs", params={"sort": "status:asc"})][:2] == ["completed"] * 2
    oldest = api.ok("GET", "/jobs", params={"sort": "created_at:asc"})
    assert [j["id"] for j in oldest] == [j["id"] for j in reversed(newest)]
    page = api.ok("GET", "/jobs", params={"limit": 3, "offset": 2})
    assert [j["id"] for j in page] == [j["id"] for j in newest[2:5]]
    assert len(api.ok("GET", "/jobs", params={"limit": 500})) == 7


@pytest.mark.parametrize(("path", "body"), [
    ("/jobs/delete", {}), ("/jobs/delete", {"ids": None, "filter": None}), ("/jobs/delete", {"ids": []}),
    ("/jobs/delete", {"ids": ["x"] * 1001}), ("/jobs/delete", {"ids": ["x"], "filter": {"field": "status",
                                                                                       "op": "eq", "value": "a"}}),
    ("/jobs/rerun", {}), ("/jobs/rerun", {"ids": []}), ("/jobs/rerun", {"ids": ["x"] * 201}),
    ("/jobs/rerun", {"filter": {"field": "nope", "op": "eq", "value": 1}}), ("/jobs/delete", {"nope": 1}),
])
def test_rerun_and_delete_bodies_past_their_limits_are_a_422(seen: tuple[Any, dict[str, Any]], path: str,
                                                              body: dict[str, Any]) -> None:
    api, _ = seen
    before = _runs_now(api)
    assert api.post(path, json=body).status_code == 422
    assert _runs_now(api) == before  # refused whole: nothing rerun or deleted


def test_the_filter_fields_are_described(api: Any) -> None:
    fields = api.ok("GET", "/jobs/filter-fields")
    assert {f["name"] for f in fields} >= {"workflow_name", "status", "trigger", "schema_name", "record_id", "error",
                                          "error_kind", "depth", "created_at", "finished_at"}
    status = next(f for f in fields if f["name"] == "status")
    assert status["choices"] == ["pending", "running", "completed", "failed", "cancelled"]
    assert all(set(f) == {"name", "label", "description", "type", "operators", "choices"} for f in fields)


@pytest.mark.parametrize("params", [{"limit": 501}, {"limit": 0}, {"offset": -1}, {"sort": "error"},
                                    {"sort": "status:up"}, {"status": "done"}, {"trigger": "cron"}])
def test_list_parameters_past_their_limits_are_a_422(api: Any, params: dict[str, Any]) -> None:
    assert api.get("/jobs", params=params).status_code == 422


def test_failure_groups_most_first(api: Any, history: dict[str, Any]) -> None:
    workflow(api, "other", {**FAILS, "steps": [{"id": "again", "plugin": "benchbook.text-stats",
                                                "inputs": {"text": "record.site"}}]})
    api.ok("POST", "/workflows/other/run", 201, json={"record_id": history["a"]["id"]})
    api.ok("POST", "/jobs/drain")
    groups = api.ok("GET", "/jobs/failure-groups")
    assert [(g["workflow"], g["count"], g["kind"], g["step"]) for g in groups] == [
        ("fails", 2, "invalid_input", "site"), ("other", 1, "invalid_input", "again")]
    assert "'text' is required" in groups[0]["example"] and "<value> is required" in groups[0]["message"]
    assert groups[0]["last_at"]
    only = api.ok("GET", "/jobs/failure-groups", params={"filter": json.dumps(
        {"field": "workflow_name", "op": "eq", "value": "other"})})
    assert [g["workflow"] for g in only] == ["other"]
    none = api.ok("GET", "/jobs/failure-groups", params={"filter": json.dumps(
        {"field": "status", "op": "eq", "value": "completed"})})
    assert none == []  # only failed runs are ever counted


def test_rerun_by_ids_keeps_the_order_asked_and_skips_with_reasons(api: Any, history: dict[str, Any]) -> None:
    failed = api.ok("GET", "/jobs", params={"status": "failed", "sort": "created_at:asc"})
    done = api.ok("GET", "/jobs", params={"workflow": "count-words", "sort": "created_at:asc"})
    api.ok("DELETE", f"/records/{history['b']['id']}", 204)  # failed[1] is for b
    asked = [done[0]["id"], "01ARZ3NDEKTSV4RRFFQ69G5FAV", failed[1]["id"], failed[0]["id"], "x"]
    out = api.ok("POST", "/jobs/rerun", json={"ids": asked})
    assert [(j["workflow_name"], j["record_id"], j["status"]) for j in out["started"]] == [
        ("count-words", done[0]["record_id"], "pending"), ("fails", failed[0]["record_id"], "pending")]
    assert [s["id"] for s in out["skipped"]] == [asked[1], asked[2], asked[4]]
    assert "not found" in out["skipped"][0]["reason"] and "no longer exists" in out["skipped"][1]["reason"]
    api.ok("POST", "/jobs/drain")
    assert len(runs(api)) == 9
    assert api.ok("GET", f"/jobs/{failed[0]['id']}")["status"] == "failed"  # the original is untouched


def test_rerun_by_filter(api: Any, history: dict[str, Any]) -> None:
    out = api.ok("POST", "/jobs/rerun", json={"filter": {"field": "status", "op": "eq", "value": "failed"}})
    assert len(out["started"]) == 2 and out["skipped"] == []
    assert {j["workflow_name"] for j in out["started"]} == {"fails"}
    api.ok("POST", "/jobs/drain")
    assert api.ok("GET", "/jobs/count", params={"status": "failed"}) == {"count": 4}


def test_delete_by_ids_and_by_filter(api: Any, history: dict[str, Any]) -> None:
    failed = api.ok("GET", "/jobs", params={"status": "failed"})
    out = api.ok("POST", "/jobs/delete", json={"ids": [failed[0]["id"], "01ARZ3NDEKTSV4RRFFQ69G5FAV"]})
    assert out == {"deleted": 1}
    out = api.ok("POST", "/jobs/delete", json={"filter": {"field": "workflow_name", "op": "eq", "value": "count-words"}})
    assert out == {"deleted": 4}
    assert [j["id"] for j in runs(api, status="failed")] == [failed[1]["id"]]
    assert api.ok("POST", "/jobs/delete", json={"filter": {"and": [{"field": "depth", "op": "gte", "value": 0}]}}) \
        == {"deleted": 2}
    assert runs(api) == []


@pytest.mark.parametrize("body", [{"ids": ["x"], "filter": None}, {"ids": None, "filter": {}}, {"filter": {}}])
def test_rerun_and_delete_take_exactly_one_of_ids_and_filter_the_other_null_or_omitted(
        api: Any, auto: dict[str, Any], body: dict[str, Any]) -> None:
    """The document says it (``not`` both or neither), so a generated client checks it too."""
    assert api.post("/jobs/delete", json=body).status_code == 200
    assert api.post("/jobs/rerun", json=body).status_code == 200


def test_a_filter_matching_more_than_1000_runs_is_refused(api: Any, auto: dict[str, Any]) -> None:
    workflow(api, "count-words", STATS)
    rec = auto["make"]({"notes": "a"})
    api.ok("POST", "/jobs/drain")
    with api.app.services.db.session() as s, s.begin():
        for _ in range(1001):
            job = queue.enqueue(s, workflow="count-words", record_id=rec["id"], schema_name="sample", trigger="manual")
            job.status, job.finished_at = "completed", utcnow()
    for path in ("/jobs/delete", "/jobs/rerun"):
        r = api.post(path, json={"filter": {"field": "trigger", "op": "eq", "value": "manual"}})
        assert r.status_code == 422 and "matches 1001 runs; at most 1000" in r.json()["detail"], r.text
    assert api.ok("GET", "/jobs/count") == {"count": 1002}
    with api.app.services.db.session() as s:
        assert s.query(Job).filter(Job.status == "pending").count() == 0
    out = api.ok("POST", "/jobs/delete", json={"ids": [j["id"] for j in api.ok("GET", "/jobs", params={"limit": 500})]})
    assert out == {"deleted": 500}
