"""The group commit of a worker's drain (``runner/drain.py``): quick runs share commits, and
every run still ends, and is kept in history, exactly as if it had run on its own: its own
batch with its figures, its own final state; a run of a group that fails rolls the group back
and runs alone; a drain that ends with an error keeps nothing half-done."""
from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import event, func, select

from benchbook.persistence.tables import AuditBatch, AuditEntry, Job
from benchbook.runner import drain as drain_module
from benchbook.runner import execution
from tests.api.helpers import make_record
from tests.api.test_events_listing import same_pages
from tests.runner.test_drain import STATS, enqueue, lab, write
from tests.waiting import HANG


def samples(api: Any, n: int) -> list[str]:
    """``n`` sample records (``lab``'s two among them) and the ``count`` workflow."""
    records = lab(api)
    write(api, STATS)
    records += [make_record(api, "lab", "sample", {"notes": "a b " * i})["id"] for i in range(1, n - 1)]
    return records


def drain_all(api: Any, group_seconds: float = HANG) -> tuple[list[tuple[str, str]], int, drain_module.Drain]:
    """Drain the queue with grouping (a group only a hang outlives: every run that may share a
    commit does, however slow the machine);
    returns what ``execute_next`` answered, the commits made, and the drain."""
    db, project = api.app.services.db, api.project
    commits: list[int] = []

    def counted(*_: Any) -> None:
        commits.append(1)

    answers = []
    event.listen(db.engine, "commit", counted)
    try:
        with drain_module.Drain(chain=db, group_seconds=group_seconds) as drain:
            while (ran := execution.execute_next(db, project, drain=drain)) is not None:
                answers.append(ran)
    finally:
        event.remove(db.engine, "commit", counted)
    return answers, len(commits), drain


def history(api: Any) -> dict[str, tuple[int, dict[str, int], int]]:
    """Each workflow batch by its run: (entry_count, parts, entries really in it)."""
    with api.app.services.db.session() as s:
        rows = s.execute(select(AuditBatch.ref, AuditBatch.entry_count, AuditBatch.parts,
                                select(func.count()).where(AuditEntry.batch_id == AuditBatch.id).scalar_subquery())
                         .where(AuditBatch.kind == "workflow")).all()
    assert len({r[0] for r in rows}) == len(rows), "one batch per run"
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def statuses(api: Any, ids: list[str]) -> list[str]:
    with api.app.services.db.session() as s:
        found = dict(s.execute(select(Job.id, Job.status).where(Job.id.in_(ids))).all())
    return [found[i] for i in ids]


def words(api: Any, record_ids: list[str]) -> list[int | None]:
    return [api.ok("GET", f"/records/{r}")["data"].get("words") for r in record_ids]


def test_quick_runs_share_commits_and_each_keeps_its_own_run_and_history(api: Any) -> None:
    records = samples(api, 12)
    ids = enqueue(api, records)
    answers, commits, drain = drain_all(api)
    assert sorted(answers) == sorted((i, "completed") for i in ids) and drain.groups == 0
    assert commits <= 3  # the first claim, the group, the last hand-back check
    assert history(api) == {i: (1, {"update record": 1}, 1) for i in ids}
    assert words(api, records) == [3, 3, *range(2, 22, 2)]
    same_pages(api)  # the kept figures and event count equal the entries grouped afresh
    events = api.ok("GET", "/audit/events", params={"limit": 100})["items"]
    assert sum(e["kind"] == "batch" and e["batch"]["kind"] == "workflow" for e in events) == 12


def test_a_run_failing_in_a_group_rolls_the_group_back_and_runs_alone(api: Any) -> None:
    records = samples(api, 12)
    ids = enqueue(api, records)
    api.ok("DELETE", f"/records/{records[5]}", status=204)  # its run fails: record_not_found
    answers, _, drain = drain_all(api)
    assert drain.groups == 1 and drain.solo == {ids[5]}
    assert {i for i, _ in answers} == set(ids) and len(answers) > len(ids)  # the group's runs ran again
    assert statuses(api, ids) == ["completed"] * 5 + ["failed"] + ["completed"] * 6
    failed = api.ok("GET", f"/jobs/{ids[5]}")
    assert failed["error_details"]["kind"] == "record_not_found" and failed["log"].count("started by") == 1
    done = history(api)
    assert done == {i: (1, {"update record": 1}, 1) for i in ids if i != ids[5]}  # no batch twice, none empty
    same_pages(api)
    assert words(api, [r for r in records if r != records[5]]) == [3, 3, 2, 4, 6, 10, 12, 14, 16, 18, 20]


def test_an_error_that_ends_the_drain_keeps_nothing_of_the_open_group(api: Any) -> None:
    records = samples(api, 3)
    ids = enqueue(api, records)
    db = api.app.services.db
    with pytest.raises(RuntimeError), drain_module.Drain(chain=db, group_seconds=HANG) as drain:
        assert execution.execute_next(db, api.project, drain=drain) == (ids[0], "completed")
        assert execution.execute_next(db, api.project, drain=drain) == (ids[1], "completed")
        assert drain.group is not None and drain.group.runs == 2
        raise RuntimeError("the worker failed")
    assert statuses(api, ids) == ["pending"] * 3
    assert history(api) == {} and words(api, records) == [None] * 3


def test_a_worker_drain_counts_each_run_once_when_a_group_is_rolled_back(api: Any) -> None:
    records = samples(api, 30)
    ids = enqueue(api, records)
    api.ok("DELETE", f"/records/{records[20]}", status=204)
    assert api.ok("POST", "/jobs/drain") == {"ran": 30, "completed": 29, "failed": 1, "cancelled": 0}
    assert statuses(api, ids).count("completed") == 29


def test_only_runs_of_built_in_steps_are_grouped() -> None:
    quick = drain_module.Claimed("A", "quick", "R", 0, "manual", "B1")
    slow = drain_module.Claimed("C", "slow", "R", 0, "manual", "B2")
    session: Any = object()
    drain = drain_module.Drain(chain=object(), group_seconds=HANG)  # type: ignore[arg-type]
    built_in = {"quick"}.__contains__
    assert not drain.keeps_open(session, slow, quick, built_in)  # the first run ran a plugin outside
    assert not drain.keeps_open(session, quick, slow, built_in)
    assert not drain.keeps_open(session, quick, None, built_in)
    assert drain.group is None
    assert drain.keeps_open(session, quick, quick, built_in) and drain.group is not None
    assert not drain_module.Drain(chain=None, group_seconds=HANG).keeps_open(session, quick, quick, built_in)
    assert not drain_module.Drain(chain=object()).keeps_open(session, quick, quick, built_in)  # type: ignore[arg-type]
