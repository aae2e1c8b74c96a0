"""Quick plugin runs go together (issue 36: the warm rate; :func:`benchbook.runner.batch_runs.quick_count`,
``docs/automation.md`` *Quick plugin runs go together*): in a worker's drain, waiting runs of a
workflow whose plugins only read take their turns one after the other in the warm process and
save in one transaction, and each ends exactly as it would have alone.

How many go together depends on how fast the runs went (the drain's pace) only through
``group_seconds``: the drains here hold a group for an hour, so ``[limits] plugin_batch_size``
alone decides, whatever the machine's speed or load. A real subprocess plugin written against
the raw protocol; both backends.
"""
from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from sqlalchemy import event, select

from benchbook.persistence.tables import AuditBatch
from benchbook.runner import batch_runs, queue, workflows
from benchbook.runner.drain import Drain
from benchbook.settings.limits import Limits
from tests.api.helpers import make_collection, make_record, make_schema
from tests.runner.automation_helpers import register_plugins
from tests.runner.rawplugin import contract, folder, script

HOUR = 3600.0
"""``group_seconds`` of the drains here: any run is quicker, so the batch size alone decides."""

# Each run: asks the host for its context record (refused unless declared), then answers the count plus
# one, its process id, the record it was shown, how many runs its process served and how many
# files it found in its scratch folder (it leaves one there each run); a count of
# 13 ends the process instead (a process_exit failure).
COUNTER = """
DESCRIBED = json.loads({described!r})
served = 0
incoming = frames()
for f in incoming:
    if f["type"] == "describe":
        send(DESCRIBED)
        continue
    count = f["inputs"].get("count") or 0
    if count == 13:
        os._exit(3)
    served += 1
    scratch = os.environ["BENCHBOOK_SCRATCH"]
    left = len(os.listdir(scratch))
    open(os.path.join(scratch, "run-%d.txt" % served), "w").close()
    send({{"type": "rpc_call", "call_id": "c", "method": "call_tool",
           "params": {{"tool": "get_context_record", "args": {{}}}}}})
    answer = next(incoming)
    seen = answer["result"]["id"] if answer["type"] == "rpc_result" else answer["error"]["kind"]
    send({{"type": "log", "message": "counted %d" % count, "stream": "log"}})
    send({{"type": "result", "outputs": {{"count": count + 1, "pid": os.getpid(), "seen": seen, "served": served,
                                          "left": left}}}})
"""
PORTS = {"inputs": {"count": {"type": "integer"}},
         "outputs": {"count": {"type": "integer"}, "pid": {"type": "integer"}, "seen": {"type": "string"},
                     "served": {"type": "integer"}, "left": {"type": "integer"}},
         "config_schema": {"type": "object"}}
WORKFLOW = {"name": "tally", "record_schema": "tally", "triggers": {"manual": {}},
            "steps": [{"id": "count", "plugin": "counter", "inputs": {"count": "record.count"}}],
            "save": {"count": "count.count", "pid": "count.pid", "seen": "count.seen", "served": "count.served",
                     "left": "count.left"}}


def _counter(root: Any, capabilities: list[str]) -> None:
    shutil.rmtree(root / "plugins", ignore_errors=True)
    described = contract("counter", capabilities=capabilities, **PORTS)
    folder(root / "plugins", "counter", script(COUNTER.format(described=json.dumps(described))))


@pytest.fixture
def tally(api: Any) -> Iterator[dict[str, Any]]:
    """The counter plugin (reads its context record only) in the project's ``plugins/``, a
    ``tally`` schema (``count`` at most 50) and the ``tally`` workflow; yields ``enqueue(records)
    -> [run id]``, ``record(count) -> id``, ``drain(batch size)`` (a worker's drain) and ``data(id)``."""
    root = api.project.root
    _counter(root, ["get_context_record"])
    make_schema(api, "tally", [{"name": "count", "type": "integer", "restrictions": {"max": 50}},
                               {"name": "pid", "type": "integer"}, {"name": "seen", "type": "string"},
                               {"name": "served", "type": "integer"}, {"name": "left", "type": "integer"}])
    make_collection(api, "tallies", ["tally"])
    register_plugins(api)
    workflows.folder(root).mkdir(exist_ok=True)
    (workflows.folder(root) / "tally.yaml").write_text(yaml.safe_dump(WORKFLOW, sort_keys=False))
    db = api.app.services.db

    def enqueue(records: list[str]) -> list[str]:
        with db.session() as s, s.begin():
            return [queue.enqueue(s, workflow="tally", record_id=r, schema_name="tally", trigger="manual").id
                    for r in records]

    def drain(size: int) -> Drain:
        return Drain(chain=db, group_seconds=HOUR, project_root=root, limits=Limits(plugin_batch_size=size))
    yield {"enqueue": enqueue, "db": db, "drain": drain,
           "record": lambda count=None: make_record(api, "tallies", "tally",
                                                    {} if count is None else {"count": count})["id"],
           "data": lambda rec: api.ok("GET", f"/records/{rec}")["data"]}
    (workflows.folder(root) / "tally.yaml").unlink()
    shutil.rmtree(root / "plugins")


def test_quick_runs_of_a_reading_plugin_go_together_and_each_ends_as_it_would_alone(
        api: Any, tally: dict[str, Any]) -> None:
    records = [tally["record"]() for _ in range(7)]
    jobs = tally["enqueue"](records)
    commits: list[object] = []

    def counted(conn: object) -> None:
        commits.append(conn)
    with tally["drain"](4) as drain:
        first = batch_runs.execute_waiting(tally["db"], api.project, drain=drain)  # its pace is not known yet
        event.listen(tally["db"].engine, "commit", counted)
        try:
            second = batch_runs.execute_waiting(tally["db"], api.project, drain=drain)
        finally:
            event.remove(tally["db"].engine, "commit", counted)
        third = batch_runs.execute_waiting(tally["db"], api.project, drain=drain)
        assert batch_runs.execute_waiting(tally["db"], api.project, drain=drain) == []
        started = drain.pool.started
    assert [first, second, third] == [[(jobs[0], "completed")], [(j, "completed") for j in jobs[1:5]],
                                      [(j, "completed") for j in jobs[5:]]]
    assert len(commits) <= 4  # four runs: their claims, their reads, their saves and ends (alone: 4 ends at least)
    saved = [tally["data"](rec) for rec in records]
    assert [d["count"] for d in saved] == [1] * 7
    assert [d["seen"] for d in saved] == records  # each run was shown its own record, none another's
    assert [d["left"] for d in saved] == [0] * 7  # and found its scratch folder empty
    assert [d["served"] for d in saved] == list(range(1, 8)) and started == 1  # one warm process served all
    for rec, job in zip(records, jobs, strict=True):
        run = api.ok("GET", f"/jobs/{job}")
        lines = [line.split(" ", 1)[1] for line in run["log"].splitlines()]
        assert lines == ["started by worker ? (depth 0, trigger manual)", "[count] running counter",
                         "[count] log: counted 0", "[count] saved count, left, pid, seen, served"]
        assert run["affected_records"] == [{"record_id": rec, "schema_name": "tally", "action": "updated"}]
        with tally["db"].session() as s:
            kept = s.execute(select(AuditBatch.kind, AuditBatch.entry_count).where(AuditBatch.ref == job)).all()
        assert [tuple(row) for row in kept] == [("workflow", 1)]


def test_a_second_run_of_a_record_waits_for_a_later_group_and_sees_what_the_first_saved(
        api: Any, tally: dict[str, Any]) -> None:
    a, b = tally["record"](), tally["record"]()
    jobs = tally["enqueue"]([a, a, b, a])
    with tally["drain"](4) as drain:
        drain.paced("tally", 0.0, 1)  # quick already: the first run goes with others
        calls = []
        while ran := batch_runs.execute_waiting(tally["db"], api.project, drain=drain):
            calls.append([job for job, status in ran if status == "completed"])
    assert calls == [[jobs[0], jobs[2]], [jobs[1]], [jobs[3]]]
    assert (tally["data"](a)["count"], tally["data"](b)["count"]) == (3, 1)  # as three runs one after the other


def test_in_a_group_a_run_whose_process_dies_or_whose_save_is_refused_fails_alone(
        api: Any, tally: dict[str, Any]) -> None:
    records = [tally["record"](count) for count in (1, 13, 5, 50, 7)]
    jobs = tally["enqueue"](records)
    with tally["drain"](5) as drain:
        drain.paced("tally", 0.0, 1)
        ran = batch_runs.execute_waiting(tally["db"], api.project, drain=drain)
        started = drain.pool.started
    assert [status for _, status in ran] == ["completed", "failed", "completed", "failed", "completed"]
    kinds = [(api.ok("GET", f"/jobs/{job}")["error_details"] or {}).get("kind") for job in jobs]
    assert kinds == [None, "process_exit", None, "save_failed", None]
    saved = [tally["data"](rec) for rec in records]
    assert [d["count"] for d in saved] == [2, 13, 6, 50, 8]  # the failed runs changed nothing
    assert saved[0]["pid"] != saved[2]["pid"] == saved[4]["pid"] and started == 2  # a dead process serves no more
    assert [d.get("served") for d in saved] == [1, None, 1, None, 3]
    with tally["db"].session() as s:
        batches = s.scalars(select(AuditBatch.ref).where(AuditBatch.ref.in_(jobs))).all()
    assert sorted(batches) == sorted([jobs[0], jobs[2], jobs[4]])  # a failed run leaves no history batch


@pytest.mark.parametrize("capabilities", [["update_record"], ["find_records"]])
def test_runs_of_a_plugin_that_may_write_or_read_other_records_never_go_together(
        api: Any, tally: dict[str, Any], capabilities: list[str]) -> None:
    _counter(api.project.root, capabilities)
    register_plugins(api)
    records = [tally["record"]() for _ in range(3)]
    jobs = tally["enqueue"](records)
    with tally["drain"](4) as drain:
        drain.paced("tally", 0.0, 1)
        calls = []
        while ran := batch_runs.execute_waiting(tally["db"], api.project, drain=drain):
            calls.append(ran)
    assert calls == [[(job, "completed")] for job in jobs]
    # declared without get_context_record, its call is refused: each run still ran on its own
    assert {tally["data"](rec)["seen"] for rec in records} == {"capability_denied"}


def test_how_many_runs_go_together_follows_the_pace_of_the_drain(api: Any, tally: dict[str, Any]) -> None:
    db, project = tally["db"], api.project
    with Drain(chain=db, group_seconds=0.05, project_root=project.root, limits=Limits(plugin_batch_size=8)) as drain:
        assert batch_runs.quick_count(drain, db, project, "tally") == 1  # no run of it timed yet
        drain.paced("tally", 0.2, 20)  # 10 ms a run
        assert (drain.pace("tally"), batch_runs.quick_count(drain, db, project, "tally")) == (pytest.approx(0.01), 5)
        drain.paced("tally", 0.09, 1)  # each measure weighs half: (10 + 90) / 2 ms
        assert (drain.pace("tally"), batch_runs.quick_count(drain, db, project, "tally")) == (pytest.approx(0.05), 1)
        drain.paced("tally", 0.0, 3)
        assert batch_runs.quick_count(drain, db, project, "tally") == 2  # 25 ms
        drain.paced("tally", 0.0, 3)
        drain.paced("tally", 0.0, 3)
        assert batch_runs.quick_count(drain, db, project, "tally") == 8  # never more than plugin_batch_size
        assert batch_runs.quick_count(drain, db, project, "no-such-workflow") == 1
    with Drain(chain=db, project_root=project.root) as alone:  # not a worker's drain: no group_seconds
        alone.paced("tally", 0.0, 1)
        assert batch_runs.quick_count(alone, db, project, "tally") == 1


def test_the_worker_drains_quick_runs_to_the_same_ends_as_runs_alone(api: Any, tally: dict[str, Any]) -> None:
    records = [tally["record"](count) for count in (0, 1, 2, 3, 4, 5, 50, 7, 8, 9)]
    jobs = tally["enqueue"]([*records, records[0], records[0]])
    drained = api.ok("POST", "/jobs/drain")
    assert (drained["ran"], drained["completed"], drained["failed"]) == (12, 11, 1)
    saved = [tally["data"](rec) for rec in records]
    assert [d["count"] for d in saved] == [3, 2, 3, 4, 5, 6, 50, 8, 9, 10]
    assert [d["seen"] for d in saved if d["count"] != 50] == [rec for rec, d in zip(records, saved) if d["count"] != 50]
    assert api.ok("GET", f"/jobs/{jobs[6]}")["error_details"]["kind"] == "save_failed"
