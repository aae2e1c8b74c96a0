"""``benchbook plugins try``: one step outside any workflow, from the command line."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from sqlalchemy import func, select

from benchbook.cli.main import build_cli
from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.schemas import create_schema
from benchbook.domain.context import Ctx
from benchbook.domain.records.writes import create_record
from benchbook.persistence.db import open_database
from benchbook.persistence.tables import AuditBatch, Record
from benchbook.settings.config import Project
from tests.runner.rawplugin import folder

RENAMER = '''
from benchbook.plugin import Plugin

plugin = Plugin(id="renamer", name="Renamer", inputs={"suffix": {"type": "string", "required": True}},
                outputs={"site": {"type": "string"}}, capabilities=["get_context_record", "update_record"])


@plugin.run
def run(ctx, inputs, config):
    me = ctx.get_context_record()
    ctx.log("renaming " + me["data"]["site"])
    return {"site": ctx.update_record(me["id"], {"site": me["data"]["site"] + inputs["suffix"]})["data"]["site"]}
'''


def invoke(project: Project, *args: str) -> Any:
    return CliRunner().invoke(build_cli(), ["--project", str(project.root), "plugins", "try", *args])


def sample(project: Project) -> str:
    db = open_database(project.database_url)
    try:
        with db.session() as s, s.begin():
            ctx = Ctx(session=s, actor="me", files_dir=project.files_dir)
            create_schema(ctx, {"name": "sample", "fields": [{"name": "site", "type": "string"}]})
            create_collection(ctx, {"name": "lab", "schemas": ["sample"]})
            return create_record(ctx, "lab", {"schema_name": "sample", "data": {"site": "North"}}).id
    finally:
        db.engine.dispose()


def site_and_batches(project: Project, record_id: str) -> tuple[str, int]:
    db = open_database(project.database_url)
    try:
        with db.session() as s:
            rec = s.get(Record, record_id)
            assert rec is not None
            site = next(iter(rec.data.values()))
            return site, s.scalar(select(func.count()).select_from(AuditBatch).where(AuditBatch.kind == "workflow")) or 0
    finally:
        db.engine.dispose()


def test_a_built_in_runs_and_its_outputs_are_printed(tmp_project: Project) -> None:
    result = invoke(tmp_project, "benchbook.text-stats", "--inputs", '{"text": "one two three"}')
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"words": 3, "characters": 13, "lines": 1}


def test_a_project_plugin_changes_the_record_in_a_batch_and_shows_its_frames(tmp_project: Project) -> None:
    record_id = sample(tmp_project)
    folder(tmp_project.root / "plugins", "renamer", RENAMER,
           manifest='command = ["{python}", "-m", "benchbook.plugin", "plugin.py"]\n')
    dry = invoke(tmp_project, "renamer", "--record", record_id, "--inputs", '{"suffix": "-2"}', "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert site_and_batches(tmp_project, record_id) == ("North", 0)
    result = invoke(tmp_project, "renamer", "--record", record_id, "--inputs", '{"suffix": "-2"}', "--frames")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"site": "North-2"}
    assert site_and_batches(tmp_project, record_id) == ("North-2", 1)
    shown = result.stderr.splitlines()
    assert shown[0].startswith('host → plugin: {"type": "run", "inputs": {"suffix": "-2"}')
    assert any(line.startswith('plugin → host: {"type": "rpc_call"') and "get_context_record" in line
               for line in shown)
    assert any(line.startswith('host → plugin: {"type": "rpc_result"') for line in shown)
    assert "[log] renaming North" in shown
    assert shown[-1] == 'plugin → host: {"type": "result", "outputs": {"site": "North-2"}}'


def test_a_failing_step_exits_1_with_its_kind(tmp_project: Project, tmp_path: Path) -> None:
    result = invoke(tmp_project, "benchbook.text-stats", "--inputs", '{"text": 3}')
    assert result.exit_code == 1
    assert result.stderr == "step failed: invalid_input: input 'text': expected string, got int 3\n"
    missing = invoke(tmp_project, "no-such-plugin")
    assert missing.exit_code == 1 and "plugin 'no-such-plugin' not found" in missing.stderr
    bad = invoke(tmp_project, "benchbook.text-stats", "--inputs", "[1]")
    assert bad.exit_code == 2 and "must be a JSON object" in bad.stderr
