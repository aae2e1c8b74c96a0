"""Workflow files over the API: listed with their problems, written only when valid, every
problem named in one 422, deleted unless runs wait."""
from __future__ import annotations

import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

from benchbook.runner.workflows import reference
from tests.api.helpers import make_collection, make_schema

GOOD = textwrap.dedent("""\
    name: notes-stats
    description: Count the words of a sample's notes
    record_schema: sample
    triggers:
      record_created: {}
      record_updated: {fields: [notes]}
    steps:
      - id: stats
        plugin: benchbook.text-stats
        inputs: {text: record.notes}
        timeout: 30
        if: {field: notes, op: is_null, value: false}
    save:
      words: stats.words
""")


@pytest.fixture
def project(api: Any) -> Path:
    root: Path = api.project.root
    shutil.rmtree(root / "workflows", ignore_errors=True)
    (root / "workflows").mkdir()
    make_schema(api, "study", [{"name": "title", "type": "string"}])
    make_schema(api, "sample", [{"name": "notes", "type": "string"}, {"name": "words", "type": "integer"}],
                parent="study")
    make_collection(api, "lab", ["study", "sample"])
    api.ok("POST", "/plugins/refresh")
    return root


def test_a_valid_workflow_is_written_and_listed(api: Any, project: Path) -> None:
    created = api.ok("PUT", "/workflows/notes-stats", 201, json={"content": GOOD})
    assert created | {"content": None} == {
        "name": "notes-stats", "description": "Count the words of a sample's notes", "record_schema": "sample",
        "triggers": {"record_created": {}, "record_updated": {"fields": ["notes"]}},
        "steps": [{"id": "stats", "plugin": "benchbook.text-stats", "config": {}, "inputs": {"text": "record.notes"},
                   "timeout": 30, "if": {"field": "notes", "op": "is_null", "value": False}}],
        "save": {"words": "stats.words"}, "content": None, "valid": True, "problems": []}
    assert (project / "workflows" / "notes-stats.yaml").read_text() == GOOD
    assert api.ok("GET", "/workflows") == [created]
    assert api.ok("GET", "/workflows/notes-stats") == created
    assert api.ok("PUT", "/workflows/notes-stats", 200, json={"content": GOOD.replace("30", "40")})["steps"][0][
        "timeout"] == 40


def test_every_problem_is_listed_in_one_422_and_nothing_is_written(api: Any, project: Path) -> None:
    bad = textwrap.dedent("""\
        name: broken
        record_schema: sample
        colour: blue
        triggers:
          record_updated: {fields: [notes, nope]}
          on_friday: {}
        steps:
          - id: first
            plugin: benchbook.text-stats
            config: {verbose: true}
            inputs: {text: later.words, extra: 1}
          - id: later
            plugin: no-such-plugin
            inputs: {x: record.missing}
          - id: checksum
            plugin: benchbook.file-checksum
        save:
          words: first.wordz
          nowhere: first.words
          title: first.words
    """)
    r = api.put("/workflows/broken", json={"content": bad})
    assert r.status_code == 422
    got = {(tuple(e["loc"]), e["msg"]) for e in r.json()["errors"]}
    assert got == {
        (("body", "content", "colour"), ("unknown key 'colour' (keys: name, description, record_schema, triggers, "
                                        "steps, save)")),
        (("body", "content", "triggers", "on_friday"), ("unknown trigger 'on_friday' (triggers: record_created, "
                                                       "record_updated, manual)")),
        (("body", "content", "triggers", "record_updated", "fields", 1), "unknown field 'nope'"),
        (("body", "content", "steps", 0, "config"), "Additional properties are not allowed ('verbose' was unexpected)"),
        (("body", "content", "steps", 0, "inputs", "text"),
         "'later.words' refers to step 'later', which does not run before this one"),
        (("body", "content", "steps", 0, "inputs", "extra"), "plugin 'benchbook.text-stats' has no input 'extra'"),
        (("body", "content", "steps", 1, "plugin"), "unknown plugin 'no-such-plugin'"),
        (("body", "content", "steps", 1, "inputs", "x"), "record has no field 'missing'"),
        (("body", "content", "steps", 2, "inputs", "file"), ("input 'file' is required by plugin "
                                                            "'benchbook.file-checksum'")),
        (("body", "content", "save", "words"), "step 'first' has no output 'wordz'"),
        (("body", "content", "save", "nowhere"), "'sample' has no field 'nowhere' to save into"),
        (("body", "content", "save", "title"), "'sample' has no field 'title' to save into"),
    }
    assert r.json()["detail"].startswith("workflow 'broken' has 12 problem(s): ")
    assert not (project / "workflows" / "broken.yaml").exists()


@pytest.mark.parametrize(("content", "msg"), [
    ("name: [", "not valid YAML"),
    ("- a list", "a workflow is a YAML mapping"),
    (("name: other\nrecord_schema: sample\ntriggers: {manual: {}}\nsteps: [{id: s, plugin: benchbook.text-stats, "
     "inputs: {text: hi}}]"), "name 'other' differs from the file's name 'wf'"),
    (("record_schema: ghost\ntriggers: {manual: {}}\nsteps: [{id: s, plugin: benchbook.text-stats, "
     "inputs: {text: hi}}]"), "unknown schema 'ghost'"),
    ("record_schema: sample\ntriggers: {}\nsteps: [{id: s, plugin: benchbook.text-stats, inputs: {text: hi}}]",
     "triggers must name at least one of record_created, record_updated, manual"),
    ("record_schema: sample\ntriggers: {manual: {}}\nsteps: []", "steps must be a non-empty list"),
    ("record_schema: sample\ntriggers: {manual: {}}\nsteps: [{id: record, plugin: benchbook.text-stats}]",
     "id must be a slug (a-z, 0-9, - and _), not 'record'"),
    (("record_schema: sample\ntriggers: {manual: {}}\nsteps: [{id: s, plugin: benchbook.text-stats, timeout: -1, "
     "inputs: {text: hi}}]"), "timeout must be a positive number of seconds"),
])
def test_each_kind_of_problem_is_named(api: Any, project: Path, content: str, msg: str) -> None:
    r = api.put("/workflows/wf", json={"content": content})
    assert r.status_code == 422
    assert any(msg in e["msg"] for e in r.json()["errors"]), r.json()


def test_an_inherited_field_and_the_record_id_are_valid_references(api: Any, project: Path) -> None:
    content = ("record_schema: sample\ntriggers: {manual: {}}\nsteps:\n  - {id: a, plugin: benchbook.text-stats, "
               "inputs: {text: record.title}}\n  - {id: b, plugin: benchbook.text-stats, inputs: {text: record.id}}\n")
    assert api.ok("PUT", "/workflows/inherits", 201, json={"content": content})["valid"] is True


def test_a_broken_file_on_disk_is_listed_with_its_problems_never_skipped(api: Any, project: Path) -> None:
    (project / "workflows" / "good.yaml").write_text(GOOD.replace("notes-stats", "good"))
    (project / "workflows" / "bad.yaml").write_text("record_schema: ghost\n")
    (project / "workflows" / "Bad Name.yml").write_text(GOOD)
    listed = {w["name"]: w for w in api.ok("GET", "/workflows")}
    assert set(listed) == {"good", "bad", "Bad Name"}
    assert listed["good"]["valid"] is True
    assert listed["bad"]["valid"] is False and {p["msg"] for p in listed["bad"]["problems"]} >= {
        "unknown schema 'ghost'", "steps must be a non-empty list"}
    assert listed["Bad Name"]["problems"][0]["msg"] == "file name 'Bad Name.yml' is not a workflow name (a slug)"


def test_delete_removes_the_file_and_unknown_names_are_404(api: Any, project: Path) -> None:
    api.ok("PUT", "/workflows/notes-stats", 201, json={"content": GOOD})
    api.ok("DELETE", "/workflows/notes-stats", 204)
    assert not (project / "workflows" / "notes-stats.yaml").exists()
    assert api.get("/workflows/notes-stats").status_code == 404
    assert api.delete("/workflows/notes-stats").json() == {"detail": "workflow 'notes-stats' not found"}
    assert api.put("/workflows/Not A Slug", json={"content": GOOD}).status_code == 422


@pytest.mark.parametrize(("value", "ref"), [
    ("record.notes", ("record", "notes")), ("record.id", ("record", "id")), ("stats.words", ("stats", "words")),
    ("other.words", None), ("just text", None), ("a.b.c", None), (3, None), ("record.", None),
])
def test_references_are_told_from_literals(value: Any, ref: tuple[str, str] | None) -> None:
    assert reference(value, {"stats"}) == ref


def test_delete_with_waiting_or_running_runs_is_409_unless_forced(api: Any, project: Path) -> None:
    from benchbook.domain.ids import new_id
    from benchbook.persistence.tables import Job

    api.ok("PUT", "/workflows/notes-stats", 201, json={"content": GOOD})
    with api.app.services.db.session() as s, s.begin():
        for status in ("pending", "running", "completed"):
            s.add(Job(id=new_id(), workflow_name="notes-stats", record_id=new_id(), schema_name="sample",
                      trigger="manual", status=status, inputs={}))
    r = api.delete("/workflows/notes-stats")
    assert r.status_code == 409 and "has 2 waiting or running run(s)" in r.json()["detail"]
    api.ok("DELETE", "/workflows/notes-stats?force=true", 204)
    with api.app.services.db.session() as s:
        jobs = {j.status: j for j in s.query(Job).all()}
    assert set(jobs) == {"cancelled", "running", "completed"}
    assert jobs["running"].cancel_requested is True and jobs["cancelled"].finished_at is not None


def test_a_yaml_syntax_error_names_its_line_and_column_in_words(api: Any, project: Path) -> None:
    """Issue 37 item 6: the editor got PyYAML's raw text, starting with ": ", and no line."""
    content = "record_schema: sample\ntriggers: {manual: {}}\nsteps:\n  - id: s\n    plugin: x: y\n"
    r = api.put("/workflows/wf", json={"content": content})
    assert r.status_code == 422
    (error,) = r.json()["errors"]
    assert error["msg"] == ("not valid YAML at line 5, column 14: mapping values are not allowed here")
    assert error["ctx"] == {"line": 5, "column": 14}
