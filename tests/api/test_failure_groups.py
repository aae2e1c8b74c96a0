"""Failure groups that group (issue 36 item 3): ``GET /jobs/failure-groups`` keys on workflow,
error kind, failed step and the message's template (numbers, ids, quoted values and paths
replaced), shows one example message and the count; the database and
:func:`benchbook.runner.failure_groups.template` compute the same template."""
from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import literal, select

from benchbook.domain.ids import new_id
from benchbook.domain.message_template import template
from benchbook.persistence.tables import utcnow
from benchbook.runner import queue
from benchbook.runner.failure_groups import template_sql

SAMPLES = [
    "record 01J8520MNM9WNX52VQ6EBVF43A has 'x' in /tmp/a.csv row 12",
    "can't parse delay 0.40s for flight UA1545 at data/flights/2013.csv",
    'field "year" missing; got `None` (3e-5, 1.2.3, -7)',
    "C:\\Users\\ann\\f.txt not found, nor ./out/x, ~/y or http://host/a/b?q=1",
    "id 123e4567-e89b-12d3-a456-426614174000 gone; runs/s and/or 01j8520mnm9wnx52vq6ebvf43a",
    "ünïcode 'é' 42 ключ\nsecond line 7",
    "",
]


def _fail(api: Any, runs: list[tuple[str, str | None, str | None, str]]) -> None:
    """Add failed runs ``(workflow, kind, step, message)``, each a second later than the last."""
    start = utcnow()
    with api.app.services.db.session() as s, s.begin():
        for n, (wf, kind, step, message) in enumerate(runs):
            job = queue.enqueue(s, workflow=wf, record_id=new_id(), schema_name="flight", trigger="manual")
            job.status, job.finished_at = "failed", start + timedelta(seconds=n)
            job.error, job.error_details = message, {"kind": kind, "step": step, "message": message}


def test_eleven_failures_with_per_record_values_are_one_group(api: Any) -> None:
    per_record = [("classify", "plugin_error", "delay",
                   (f"ValueError: flight {new_id()} ('N{100 + n}UA') has dep_delay {n * 7.5} not in "
                    f"/data/run{n}/delays.csv")) for n in range(11)]
    _fail(api, [*per_record,
                ("classify", "timeout", "delay", "the step ran longer than 30 s"),  # another kind
                ("classify", "plugin_error", "tag", per_record[0][3]),  # another step
                ("tidy", "plugin_error", "delay", per_record[0][3])])  # another workflow
    groups = api.ok("GET", "/jobs/failure-groups")
    assert [(g["workflow"], g["kind"], g["step"], g["count"]) for g in groups] == [
        ("classify", "plugin_error", "delay", 11), ("tidy", "plugin_error", "delay", 1),
        ("classify", "plugin_error", "tag", 1), ("classify", "timeout", "delay", 1)]  # then latest first
    first = groups[0]
    assert first["message"] == "ValueError: flight <id> (<value>) has dep_delay <n> not in <path>"
    assert first["example"] in {m for *_, m in per_record}
    assert groups[3]["message"] == "the step ran longer than <n> s"
    assert groups[3]["example"] == "the step ran longer than 30 s"
    only = api.ok("GET", "/jobs/failure-groups", params={"filter": json.dumps(
        {"field": "failed_step", "op": "eq", "value": "tag"})})
    assert [(g["step"], g["count"], g["example"]) for g in only] == [("tag", 1, per_record[0][3])]


def test_a_run_without_a_message_is_its_own_group(api: Any) -> None:
    _fail(api, [("classify", None, None, "x")])
    with api.app.services.db.session() as s, s.begin():
        for job in s.scalars(select(queue.Job)):
            job.error_details = None
    assert [(g["count"], g["message"], g["example"], g["kind"]) for g in api.ok("GET", "/jobs/failure-groups")] == [
        (1, None, None, None)]


@pytest.mark.parametrize("message", SAMPLES)
def test_the_database_and_python_give_the_same_template(api: Any, message: str) -> None:
    with api.app.services.db.session() as s:
        assert s.scalar(select(template_sql(s, literal(message)))) == template(message)


def test_the_template_replaces_what_varies() -> None:
    assert [template(m) for m in SAMPLES[:5]] == [
        "record <id> has <value> in <path> row <n>",
        "can't parse delay <n>s for flight UA<n> at <path>",
        "field <value> missing; got <value> (<n>, <n>, -<n>)",
        "<path> not found, nor <path>, <path> or http:<path>",
        "id <id> gone; runs/s and/or <id>"]
    assert template(None) is None
