"""Triggers (spec *Events* 2–4): which edits queue runs, what a run records of its cause, runs
started by runs and the end of their chains, and runs started by hand."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from tests.runner.automation_helpers import SDK_MANIFEST, STATS, auto, gate, runs, workflow
from tests.runner.rawplugin import folder

__all__ = ["auto", "gate"]  # fixtures


def test_an_edit_starts_a_run_only_when_a_watched_field_really_changed(api: Any, auto: dict[str, Any]) -> None:
    workflow(api, "count-words", {**STATS, "triggers": {"record_updated": {"fields": ["notes", "flag"]}}})
    rec = auto["make"]({"notes": "a b", "site": "North"})
    rid = rec["id"]
    api.ok("PATCH", f"/records/{rid}", json={"data": {"site": "South"}})  # not watched
    api.ok("PATCH", f"/records/{rid}", json={"data": {"notes": "a b"}})  # watched, but the same value
    api.ok("POST", "/jobs/drain")
    assert runs(api) == []  # not even for the create: only record_updated is a trigger
    api.ok("PATCH", f"/records/{rid}", json={"data": {"notes": "a b c", "site": "West"}})
    api.ok("POST", "/jobs/drain")
    [job] = runs(api)
    assert job["trigger"] == "record_updated" and job["status"] == "completed"
    assert job["trigger_detail"] == {"caused_by": None, "changes": [
        {"field": "notes", "label": "notes", "before": "a b", "after": "a b c", "watched": True},
        {"field": "site", "label": "site", "before": "South", "after": "West", "watched": False}]}
    api.ok("PATCH", f"/records/{rid}", json={"data": {"flag": True}})
    api.ok("POST", "/jobs/drain")
    assert [j["trigger_detail"]["changes"] for j in runs(api)][1] == [
        {"field": "flag", "label": "flag", "before": None, "after": True, "watched": True}]


def test_long_values_are_shortened_in_the_trigger_detail(api: Any, auto: dict[str, Any]) -> None:
    workflow(api, "count-words", {**STATS, "triggers": {"record_updated": {"fields": ["notes"]}}})
    rec = auto["make"]({"notes": "short"})
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"notes": "word " * 100}})
    api.ok("POST", "/jobs/drain")
    [change] = runs(api)[0]["trigger_detail"]["changes"]
    assert change["before"] == "short" and len(change["after"]) == 201 and change["after"].endswith("…")
    assert api.ok("GET", f"/records/{rec['id']}")["data"]["words"] == 100  # the run saw the whole value


def test_a_workflow_saving_other_fields_of_its_record_does_not_trigger_itself(
        api: Any, auto: dict[str, Any]) -> None:
    workflow(api, "count-words", STATS)  # watches notes, saves words and chars
    rec = auto["make"]({"notes": "a b"})
    api.ok("POST", "/jobs/drain")
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"notes": "a b c"}})
    api.ok("POST", "/jobs/drain")
    assert [(j["trigger"], j["depth"], j["status"]) for j in runs(api)] == [
        ("record_created", 0, "completed"), ("record_updated", 0, "completed")]


def test_a_watched_file_field_saved_around_starts_nothing_more(api: Any, auto: dict[str, Any]) -> None:
    workflow(api, "checksum", {
        "record_schema": "sample", "triggers": {"record_updated": {"fields": ["data"]}},
        "steps": [{"id": "sum", "plugin": "benchbook.file-checksum", "config": {"algorithm": "sha1"},
                   "inputs": {"file": "record.data"}}],
        "save": {"checksum": "sum.checksum", "chars": "sum.size"}})
    rec = auto["make"]({"notes": "n"})
    first = api.ok("POST", "/files", 201, files={"file": ("a.txt", b"first")})
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"data": first["sha256"]}})
    api.ok("POST", "/jobs/drain")
    again = api.ok("POST", "/files", 201, files={"file": ("renamed.txt", b"first")})  # same content, new name
    assert again["sha256"] == first["sha256"]
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"data": again["sha256"]}})
    api.ok("POST", "/jobs/drain")
    [job] = runs(api)
    assert job["status"] == "completed" and job["affected_records"][0]["action"] == "updated"
    data = api.ok("GET", f"/records/{rec['id']}")["data"]
    assert (data["checksum"], data["chars"]) == (hashlib.sha1(b"first").hexdigest(), 5)


def test_a_runs_save_starts_the_workflows_watching_what_it_changed_one_hop_deeper(
        api: Any, auto: dict[str, Any], gate: Path) -> None:
    workflow(api, "annotate", {"record_schema": "sample", "triggers": {"manual": {}},
                               "steps": [{"id": "g", "plugin": "gate", "inputs": {"text": "record.site"}}],
                               "save": {"notes": "g.text"}})
    workflow(api, "count-words", STATS)
    rec = auto["make"]({"site": "North"})
    api.ok("POST", "/jobs/drain")  # count-words for the create fails: no notes yet
    first = api.ok("POST", "/workflows/annotate/run", 201, json={"record_id": rec["id"]})
    api.ok("POST", "/jobs/drain")
    caused = runs(api, workflow="count-words", trigger="record_updated")
    assert len(caused) == 1
    [job] = caused
    assert job["depth"] == 1 and job["status"] == "completed"
    assert job["trigger_detail"]["caused_by"] == {"job_id": first["id"], "workflow": "annotate"}
    assert f"queued run {job['id']} of workflow 'count-words'" in api.ok("GET", f"/jobs/{first['id']}")["log"]
    assert api.ok("GET", f"/records/{rec['id']}")["data"]["words"] == 2  # "North x"


def test_a_chain_of_runs_started_by_runs_ends_after_ten_hops(api: Any, auto: dict[str, Any], gate: Path) -> None:
    workflow(api, "grow", {"record_schema": "sample", "triggers": {"record_updated": {"fields": ["notes"]},
                                                                   "manual": {}},
                           "steps": [{"id": "g", "plugin": "gate", "inputs": {"text": "record.notes"}}],
                           "save": {"notes": "g.text"}})
    rec = auto["make"]({"notes": "n"})
    api.ok("POST", "/workflows/grow/run", 201, json={"record_id": rec["id"]})
    api.ok("POST", "/jobs/drain")
    chain = sorted(runs(api), key=lambda j: j["depth"])
    assert [j["depth"] for j in chain] == list(range(11)) and {j["status"] for j in chain} == {"completed"}
    assert [j["trigger"] for j in chain] == ["manual"] + ["record_updated"] * 10
    assert all(j["trigger_detail"]["caused_by"]["job_id"] == chain[i]["id"] for i, j in enumerate(chain[1:]))
    last = chain[-1]
    assert "chains of runs started by runs end after 10 hops" in last["log"]
    assert api.ok("GET", f"/records/{rec['id']}")["data"]["notes"] == "n" + " x" * 11


def test_a_workflow_with_problems_starts_nothing(api: Any, auto: dict[str, Any]) -> None:
    workflow(api, "broken", {**STATS, "steps": [{"id": "stats", "plugin": "no-such-plugin", "inputs": {}}]})
    auto["make"]({"notes": "a"})
    api.ok("POST", "/jobs/drain")
    assert runs(api) == []


def test_a_manual_run_needs_a_runnable_workflow_and_a_record_of_its_schema(api: Any, auto: dict[str, Any]) -> None:
    workflow(api, "count-words", STATS)
    workflow(api, "automatic", {**STATS, "triggers": {"record_created": {}}})
    workflow(api, "broken", {**STATS, "steps": [{"id": "stats", "plugin": "no-such-plugin", "inputs": {}}]})
    rec = auto["make"]({"notes": "a b"})
    study = auto["study"]
    cases = [("count-words", rec["id"], 201), ("nope", rec["id"], 404), ("count-words", "01ARZ3NDEKTSV4RRFFQ69G5FAV", 404),
             ("count-words", study["id"], 422), ("automatic", rec["id"], 422), ("broken", rec["id"], 422),
             ("count-words", rec["id"][:-1].lower(), 201)]
    for name, record_id, status in cases:
        r = api.post(f"/workflows/{name}/run", json={"record_id": record_id})
        assert r.status_code == status, (name, record_id, r.text)
    assert "runs for 'sample' records" in api.post("/workflows/count-words/run", json={"record_id": study["id"]}).json()["detail"]
    assert "do not include manual" in api.post("/workflows/automatic/run", json={"record_id": rec["id"]}).json()["detail"]
    assert api.post("/workflows/count-words/run", json={}).status_code == 422


def test_run_many_queues_one_run_per_ticked_record_and_says_which_could_not_run(
        api: Any, auto: dict[str, Any]) -> None:
    workflow(api, "count-words", {**STATS, "triggers": {"manual": {}}})
    a, b = auto["make"]({"notes": "a"}), auto["make"]({"notes": "b c"})
    api.ok("DELETE", f"/records/{b['id']}", 204)
    c = auto["make"]({"notes": "d e f"})
    asked = [a["id"], "01ARZ3NDEKTSV4RRFFQ69G5FAV", b["id"], auto["study"]["id"], c["id"], a["id"]]
    out = api.ok("POST", "/workflows/count-words/run-many", json={"record_ids": asked})
    assert out["started"] == 2 and len(out["job_ids"]) == 2
    assert [s["id"] for s in out["skipped"]] == asked[1:4] + [a["id"]]
    assert "not found" in out["skipped"][0]["reason"] and "more than once" in out["skipped"][3]["reason"]
    assert [(j["id"], j["trigger"], j["record_id"]) for j in runs(api)] == [
        (out["job_ids"][0], "manual", a["id"]), (out["job_ids"][1], "manual", c["id"])]
    api.ok("POST", "/jobs/drain")
    assert [api.ok("GET", f"/records/{r['id']}")["data"]["words"] for r in (a, c)] == [1, 3]
    for bad in ([], ["x"] * 1001):
        assert api.post("/workflows/count-words/run-many", json={"record_ids": bad}).status_code == 422
    assert api.post("/workflows/nope/run-many", json={"record_ids": [a["id"]]}).status_code == 404


def test_a_value_exactly_200_characters_long_is_kept_whole_in_the_trigger_detail(
        api: Any, auto: dict[str, Any]) -> None:
    api.ok("POST", "/schemas/sample/fields", 201, json={"name": "labels", "type": "tags"})
    workflow(api, "watch", {**STATS, "triggers": {"record_updated": {"fields": ["notes", "labels"]}}})
    rec = auto["make"]({"notes": "n"})
    labels = ["a" * 46, "b" * 46, "c" * 46, "d" * 46]  # ["aaa…", …] is 200 characters of JSON
    assert len(json.dumps(labels)) == 200
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"notes": "w" * 200, "labels": labels}})
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"notes": "w" * 201, "labels": [*labels, "e"]}})
    api.ok("POST", "/jobs/drain")
    first, second = ({c["field"]: c["after"] for c in j["trigger_detail"]["changes"]} for j in runs(api))
    assert first == {"notes": "w" * 200, "labels": labels}
    assert second["notes"] == "w" * 200 + "…"
    assert second["labels"] == json.dumps([*labels, "e"], ensure_ascii=False)[:200] + "…"


def test_an_edited_workflow_file_is_what_the_next_change_triggers(api: Any, auto: dict[str, Any]) -> None:
    body = {**STATS, "record_schema": "study", "triggers": {"record_created": {}}}
    workflow(api, "retargeted", body)
    auto["make"]({"notes": "a"})  # read the file: a study workflow, nothing for samples
    workflow(api, "retargeted", {**body, "record_schema": "sample"})  # another size: seen as changed
    rec = auto["make"]({"notes": "a b"})
    assert [(j["workflow_name"], j["record_id"]) for j in runs(api)] == [("retargeted", rec["id"])]


MAKER = '''
from benchbook.plugin import Plugin

plugin = Plugin(id="maker", name="Maker", category="test", outputs={"made": {"type": "string"}},
                capabilities=["get_context_record", "create_record", "update_record"])


@plugin.run
def run(ctx, inputs, config):
    me = ctx.get_context_record()
    made = ctx.create_record("lab", "sample", {"site": "made"}, parent_record_id=me["parent_record_id"])
    ctx.update_record(made["id"], {"notes": "one two three"})
    return {"made": made["id"]}
'''


def test_a_record_a_run_creates_and_then_edits_starts_its_workflows_as_created(
        api: Any, auto: dict[str, Any]) -> None:
    folder(api.project.root / "plugins", "maker", MAKER, manifest=SDK_MANIFEST)
    api.ok("POST", "/plugins/refresh")
    workflow(api, "make-one", {"record_schema": "sample", "triggers": {"manual": {}},
                               "steps": [{"id": "m", "plugin": "maker"}]})
    workflow(api, "count-words", STATS)  # record_created, and record_updated watching notes
    rec = auto["make"]({"notes": "n"})
    api.ok("POST", "/jobs/drain")
    maker = api.ok("POST", "/workflows/make-one/run", 201, json={"record_id": rec["id"]})
    api.ok("POST", "/jobs/drain")
    assert api.ok("GET", f"/jobs/{maker['id']}")["status"] == "completed"
    made = api.ok("GET", f"/jobs/{maker['id']}")["affected_records"][0]
    assert made["action"] == "created"
    [job] = runs(api, workflow="count-words", record_id=made["record_id"])
    assert job["trigger"] == "record_created" and job["depth"] == 1 and job["status"] == "completed"
    assert {c["field"]: (c["before"], c["after"]) for c in job["trigger_detail"]["changes"]} == {
        "site": (None, "made"), "notes": (None, "one two three")}
    assert api.ok("GET", f"/records/{made['record_id']}")["data"]["words"] == 3


def test_a_yml_workflow_among_other_files_starts_like_a_yaml_one(api: Any, auto: dict[str, Any]) -> None:
    where = api.project.root / "workflows"
    for name in ("README.md", "a-notes.txt", "b-broken.yaml", "c-list.yaml", "zzz-broken.yaml"):  # before and after
        (where / name).write_text({"b-broken.yaml": "a: [", "zzz-broken.yaml": ": :", "c-list.yaml": "- 1\n"}
                                  .get(name, "not a workflow\n"))
    workflow(api, "count-words", STATS)
    (where / "count-words.yaml").rename(where / "count-words.yml")
    rec = auto["make"]({"notes": "a b"})
    assert [(j["workflow_name"], j["trigger"], j["record_id"]) for j in runs(api)] == [
        ("count-words", "record_created", rec["id"])]


def test_text_in_a_shortened_list_keeps_its_letters(api: Any, auto: dict[str, Any]) -> None:
    api.ok("POST", "/schemas/sample/fields", 201, json={"name": "labels", "type": "tags"})
    workflow(api, "watch", {**STATS, "triggers": {"record_updated": {"fields": ["labels"]}}})
    rec = auto["make"]({"notes": "n"})
    labels = [f"étiquette-{i}" for i in range(20)]
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"labels": labels}})
    [change] = runs(api)[0]["trigger_detail"]["changes"]
    assert change["after"] == json.dumps(labels, ensure_ascii=False)[:200] + "…"
