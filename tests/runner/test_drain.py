"""What a drain of the run queue keeps between runs (``drain.Drain``, ``workflows.Loaded``, the
steps' shared scratch folder) and that it never runs a workflow file as it was before it
changed on disk or through ``PUT /workflows``."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import select

from benchbook.domain.errors import NotFound
from benchbook.persistence.tables import AuditBatch, Job
from benchbook.runner import drain as drain_module
from benchbook.runner import execution, queue, workflows
from benchbook.runner.plugin_host.steps import StepRunner
from benchbook.settings.config import write_paused
from tests.api.helpers import make_collection, make_record, make_schema

STATS: dict[str, Any] = {
    "record_schema": "sample", "triggers": {"manual": {}},
    "steps": [{"id": "stats", "plugin": "benchbook.text-stats", "inputs": {"text": "record.notes"}}],
    "save": {"words": "stats.words"},
}


def lab(api: Any) -> list[str]:
    make_schema(api, "sample", [{"name": "notes", "type": "string"}, {"name": "words", "type": "integer"}])
    make_collection(api, "lab", ["sample"])
    api.ok("POST", "/plugins/refresh")
    return [make_record(api, "lab", "sample", {"notes": "one two three"})["id"] for _ in range(2)]


def write(api: Any, definition: dict[str, Any]) -> Path:
    path: Path = workflows.folder(api.project.root) / "count.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump(definition, sort_keys=False))
    return path


def enqueue(api: Any, record_ids: list[str]) -> list[str]:
    db = api.app.services.db
    with db.session() as s, s.begin():
        ids = [queue.enqueue(s, workflow="count", record_id=r, schema_name="sample", trigger="manual").id
               for r in record_ids]
    return ids


def job(api: Any, job_id: str) -> Job:
    with api.app.services.db.session() as s:
        found = s.get(Job, job_id)
        assert found is not None
        return found


def test_loaded_keeps_a_valid_workflow_until_its_file_changes_or_is_put(api: Any) -> None:
    lab(api)
    root = api.project.root
    path = write(api, STATS)
    loaded = workflows.Loaded(recheck=3600)
    with api.app.services.db.session() as s:
        first = loaded.find(s, root, "count")
        assert not first.problems and loaded.find(s, root, "count") is first
        write(api, {**STATS, "description": "changed on disk"})
        second = loaded.find(s, root, "count")
        assert second.description == "changed on disk"
        workflows.put(s, root, "count", path.read_text())  # same bytes: forgotten all the same
        assert loaded.find(s, root, "count") is not second
        write(api, {**STATS, "steps": [{**STATS["steps"][0], "plugin": "no.such-plugin"}]})
        broken = loaded.find(s, root, "count")
        assert broken.problems and loaded.find(s, root, "count") is not broken  # never kept
        path.unlink()
        with pytest.raises(NotFound):
            loaded.find(s, root, "count")


def test_a_drain_runs_the_workflow_as_it_is_on_disk_now(api: Any) -> None:
    records = lab(api)
    write(api, STATS)
    first, second = enqueue(api, records)
    db, project = api.app.services.db, api.project
    with drain_module.Drain(recheck=3600) as drain:
        assert execution.execute_next(db, project, drain=drain) == (first, "completed")
        write(api, {**STATS, "steps": [{**STATS["steps"][0], "plugin": "no.such-plugin"}]})
        assert execution.execute_next(db, project, drain=drain) == (second, "failed")
        assert execution.execute_next(db, project, drain=drain) is None
    assert (job(api, second).error_details or {})["kind"] == "workflow_invalid"
    done = job(api, first)
    assert done.affected_records == [{"record_id": records[0], "schema_name": "sample", "action": "updated"}]
    assert [e["status"] for e in done.step_executions or []] == ["completed"]
    assert api.ok("GET", f"/records/{records[0]}")["data"]["words"] == 3


def test_a_run_that_writes_nothing_leaves_no_history_batch(api: Any) -> None:
    records = lab(api)
    write(api, {**STATS, "save": {}})
    (only, _) = enqueue(api, records)
    with drain_module.Drain() as drain:
        assert execution.execute_next(api.app.services.db, api.project, drain=drain) == (only, "completed")
    with api.app.services.db.session() as s:
        assert s.scalars(select(AuditBatch.ref).where(AuditBatch.kind == "workflow")).all() == []
    assert job(api, only).affected_records == []


def test_steps_share_a_drains_scratch_folder_left_empty(tmp_path: Path) -> None:
    with StepRunner(scratch=tmp_path) as runner:
        used = runner._step_scratch()
        (used / "left.txt").write_text("x")
        spare = runner._step_scratch()
    assert not used.exists() and spare.is_dir() and not any(spare.iterdir())
    with StepRunner(scratch=tmp_path) as runner:
        assert runner._step_scratch() == used and not any(used.iterdir())
    with StepRunner() as own:
        mine = own._step_scratch()
    assert not mine.exists() and tmp_path.is_dir()


def test_a_chaining_drain_claims_the_next_run_with_the_end_of_the_last_and_hands_it_back(api: Any) -> None:
    records = lab(api)
    write(api, STATS)
    first, second = enqueue(api, records)
    db, project = api.app.services.db, api.project
    with drain_module.Drain(chain=db) as drain:
        assert execution.execute_next(db, project, drain=drain) == (first, "completed")
        assert drain.next is not None and drain.next.id == second
        assert job(api, second).status == "running"  # claimed in the commit that ended the first
    again = job(api, second)  # the drain closed without running it: waiting again, no batch left
    assert (again.status, again.started_at) == ("pending", None)
    with db.session() as s:
        assert s.scalars(select(AuditBatch.ref).where(AuditBatch.kind == "workflow")).all() == [first]
    with drain_module.Drain(chain=db) as drain:
        assert execution.execute_next(db, project, drain=drain) == (second, "completed")
        assert drain.next is None and execution.execute_next(db, project, drain=drain) is None


def test_a_run_ending_while_automation_is_paused_claims_nothing(api: Any) -> None:
    records = lab(api)
    write(api, STATS)
    first, second = enqueue(api, records)
    write_paused(api.project.root, True)
    try:
        with drain_module.Drain(chain=api.app.services.db) as drain:
            assert execution.execute(api.app.services.db, api.project, first, drain=drain) == "completed"
            assert drain.next is None
        assert job(api, second).status == "pending"
    finally:
        write_paused(api.project.root, False)


def test_a_claimed_run_asked_to_stop_before_it_ran_is_cancelled_when_handed_back(api: Any) -> None:
    records = lab(api)
    write(api, STATS)
    first, second = enqueue(api, records)
    db = api.app.services.db
    try:
        with drain_module.Drain(chain=db) as drain:
            assert execution.execute_next(db, api.project, drain=drain) == (first, "completed")
            api.ok("POST", "/automation/stop")  # the claimed run is running: asked to stop
        stopped = job(api, second)
    finally:
        # resumed only after the hand-back: this drain holds no lease (a worker's does), so a
        # resume before it would let the app's worker take the free lease and mark the claimed
        # run interrupted first, as after a crash
        api.ok("POST", "/automation/resume")
    assert (stopped.status, stopped.step_executions) == ("cancelled", None)
    assert api.ok("GET", f"/records/{records[1]}")["data"].get("words") is None
