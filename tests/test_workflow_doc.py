"""The workflow file of ``docs/automation.md`` (*Workflow files*, issue 36 item 5) is the real
thing: it uses every key a workflow file and a step take, ``PUT /workflows/{name}`` accepts it as
written in the doc, ``benchbook workflows put NAME --file`` writes it, and it runs: its steps,
``if`` and ``save`` do what the doc says (on both backends)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from benchbook.cli import generated, sending
from benchbook.cli.main import build_cli
from benchbook.runner.workflows import STEP_KEYS, TRIGGERS, WORKFLOW_KEYS
from tests.runner.automation_helpers import auto

__all__ = ["auto"]  # fixtures

DOC = Path(__file__).resolve().parents[1] / "docs" / "automation.md"


def doc_example() -> str:
    """The first fenced ``yaml`` block of the *Workflow files* section of docs/automation.md."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("\n## Workflow files\n"):]
    section = section[:section.index("\n## ", 1)]
    found = re.search(r"^```yaml\n(.*?)^```$", section, re.MULTILINE | re.DOTALL)
    assert found, "docs/automation.md: the Workflow files section has no ```yaml block"
    return found.group(1)


def test_the_example_uses_every_key() -> None:
    example = yaml.safe_load(doc_example())
    assert set(example) == set(WORKFLOW_KEYS)
    assert set(example["triggers"]) == set(TRIGGERS)
    assert set().union(*(set(step) for step in example["steps"])) == set(STEP_KEYS)


def test_the_example_is_put_and_runs_as_the_doc_says(api: Any, auto: dict[str, Any], tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    text = doc_example()
    name = yaml.safe_load(text)["name"]
    made = api.ok("PUT", f"/workflows/{name}", 201, json={"content": text})
    assert made["problems"] == [] and [s["id"] for s in made["steps"]] == ["stats", "summary"]
    assert made["save"] == {"words": "stats.words", "chars": "stats.characters"}
    file = tmp_path / "workflow.yaml"
    file.write_text(text, encoding="utf-8")
    monkeypatch.setattr(sending, "locate_project", lambda _: api.project)  # its database, PostgreSQL too
    cli = CliRunner().invoke(build_cli(), ["--project", str(api.project.root), "workflows", "put", name,
                                           "--file", str(file)])
    assert cli.exit_code == 0, cli.output
    assert (api.project.root / "workflows" / f"{name}.yaml").read_text(encoding="utf-8") == text

    rec = auto["make"]({"notes": "three short words", "site": "North"})  # record_created
    api.ok("POST", "/jobs/drain")
    data = api.ok("GET", f"/records/{rec['id']}")["data"]
    assert (data["words"], data["chars"], data["summary"]) == (3, 17, "North: 3 words")
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"site": "South"}})  # record_updated, a watched field
    api.ok("POST", "/jobs/drain")
    assert api.ok("GET", f"/records/{rec['id']}")["data"]["summary"] == "South: 3 words"
    bare = auto["make"]({"site": "East"})  # no notes: stats is skipped by its if, nothing saved from it,
    api.ok("POST", "/jobs/drain")          # and summary's input a is not given: its template fails the step
    assert set(api.ok("GET", f"/records/{bare['id']}")["data"]) == {"site"}
    run = api.ok("GET", "/jobs", params={"record_id": bare["id"]})[0]
    assert [e["status"] for e in run["step_executions"]] == ["skipped", "failed"]
    assert run["error_details"]["kind"] == "invalid_input" and "{inputs.a}" in run["error"]
    manual = api.ok("POST", f"/workflows/{name}/run", 201, json={"record_id": rec["id"]})
    api.ok("POST", "/jobs/drain")
    assert api.ok("GET", f"/jobs/{manual['id']}")["status"] == "completed"


def test_put_reads_the_content_from_a_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(generated, "run_request", lambda settings, request, **_: sent.append(request))
    cli, runner = build_cli(), CliRunner()
    file = tmp_path / "w.yaml"
    file.write_text("name: w\nrecord_schema: sample\n", encoding="utf-8")
    result = runner.invoke(cli, ["workflows", "put", "w", "--file", str(file)])
    assert result.exit_code == 0, result.output
    assert sent[-1]["json"] == {"content": "name: w\nrecord_schema: sample\n"}
    result = runner.invoke(cli, ["workflows", "put", "w", "--file", "-"], input="from: stdin\n")
    assert result.exit_code == 0 and sent[-1]["json"] == {"content": "from: stdin\n"}
    result = runner.invoke(cli, ["workflows", "put", "w", "--file", str(file), "--content", "x"])
    assert result.exit_code == 2 and "give --content or --file, not both" in result.output
    result = runner.invoke(cli, ["workflows", "put", "w", "--file", str(tmp_path / "missing.yaml")])
    assert result.exit_code == 2 and "cannot read" in result.output and "missing.yaml" in result.output
    file.write_bytes(b"\xff\xfe bad")
    result = runner.invoke(cli, ["workflows", "put", "w", "--file", str(file)])
    assert result.exit_code == 2 and "not UTF-8 text" in result.output
    assert len(sent) == 2
    assert "--file PATH" in runner.invoke(cli, ["workflows", "put", "--help"]).output
