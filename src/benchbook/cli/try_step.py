"""``benchbook plugins try ID --record RID --inputs JSON [--config JSON] [--frames]``: run one
plugin step outside any workflow, against the project, and show its outputs — how a plugin
author debugs. The step's writes are real (one ``workflow`` batch labelled ``plugins try ID``,
revertable like any other); with ``--dry-run`` they are rolled back. Logs (and, with
``--frames``, every frame both ways) go to standard error; the outputs are printed as JSON.

Input values are JSON; for a ``bytes`` input ``"@path"`` reads a file, for a ``table`` input
``"@path.csv"`` reads a CSV file (pandas).
"""
from __future__ import annotations

import hashlib
import json
import sys
from datetime import date, datetime
from pathlib import Path
from typing import Any

import click

from benchbook.cli.sending import Settings
from benchbook.domain import plugin_registry as registry
from benchbook.domain.context import Ctx
from benchbook.domain.errors import BenchbookError
from benchbook.domain.history import entries
from benchbook.persistence.db import COMMAND_WAIT, DatabaseBusy, open_database, write_lock
from benchbook.runner.errors import StepFailed
from benchbook.runner.plugin_host import discovery
from benchbook.runner.plugin_host.rpc import HostOperations
from benchbook.runner.plugin_host.steps import StepRunner
from benchbook.settings.config import Project


def _json_object(value: str | None, option: str) -> dict[str, Any]:
    if not value:
        return {}
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint=option) from None
    if not isinstance(parsed, dict):
        raise click.BadParameter("must be a JSON object", param_hint=option)
    return parsed


def _read_files(plugin: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    out = dict(inputs)
    for name, value in inputs.items():
        kind = plugin["inputs"].get(name, {}).get("type")
        if isinstance(value, str) and value.startswith("@") and kind in ("bytes", "table"):
            path = Path(value[1:]).expanduser()
            if not path.is_file():
                raise click.BadParameter(f"input {name!r}: no file {path}", param_hint="--inputs")
            if kind == "bytes":
                out[name] = path.read_bytes()
            else:
                import pandas as pd
                out[name] = pd.read_csv(path)
    return out


def _shown(value: Any) -> Any:
    """An output value as JSON for the terminal (bytes and tables summarised)."""
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": len(value), "sha256": hashlib.sha256(value).hexdigest()}
    if hasattr(value, "to_json") and hasattr(value, "columns"):  # a DataFrame
        return {"rows": len(value), "columns": list(value.columns),
                "head": json.loads(value.head(20).to_json(orient="records", date_format="iso"))}
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    return value


def _frame_printer(direction: str, frame: dict[str, Any]) -> None:
    arrow = "host → plugin" if direction == "host" else "plugin → host"
    text = json.dumps(frame, ensure_ascii=False)
    click.echo(f"{arrow}: {text if len(text) <= 2000 else text[:2000] + ' …'}", err=True)


@click.command("try")
@click.argument("plugin_id")
@click.option("--record", "record_id", default=None, help="The record the step is about (get_context_record).")
@click.option("--inputs", default=None, help='Inputs as a JSON object, e.g. \'{"text": "a b"}\'.')
@click.option("--config", default=None, help="Config as a JSON object (checked against the config schema).")
@click.option("--frames", is_flag=True, default=False, help="Show every frame both ways on standard error.")
@click.option("--timeout", type=float, default=None, help="Seconds the step may take (default: the plugin's).")
@click.option("--dry-run", is_flag=True, default=False, help="Roll back whatever the step wrote.")
@click.pass_context
def try_command(ctx: click.Context, plugin_id: str, record_id: str | None, inputs: str | None, config: str | None,
                frames: bool, timeout: float | None, dry_run: bool) -> None:
    """Run one step of plugin PLUGIN_ID outside any workflow and print its outputs as JSON.
    Exit status 1 when the step fails (its error kind and message on standard error)."""
    project = Project.locate(getattr(ctx.find_object(Settings), "project", None))
    given_inputs, given_config = _json_object(inputs, "--inputs"), _json_object(config, "--config")
    db = open_database(project.database_url)
    try:
        with db.session() as session:
            empty = registry.is_empty(session)
        if empty:
            found = discovery.discover(project.root / "plugins")
            with db.session() as session, session.begin():
                write_lock(session, COMMAND_WAIT)
                registry.replace_all(session, found)
        with db.session() as session:
            plugin = registry.runnable(session, plugin_id)
        with db.session() as session, StepRunner(log=lambda s, m: click.echo(f"[{s}] {m}", err=True),
                                                     project_root=project.root) as runner:
            transaction = session.begin()
            write_lock(session, COMMAND_WAIT)  # the step's writes are one transaction: one writer for its length
            c = Ctx(session=session, actor=project.actor, files_dir=project.files_dir)
            c.batch_id = entries.open_batch(c, "workflow", f"plugins try {plugin_id}").id
            try:
                outputs = runner.run_step(plugin, _read_files(plugin, given_inputs), given_config, timeout=timeout,
                                          rpc_for=lambda scratch: HostOperations(c, record_id=record_id,
                                                                                 scratch=scratch),
                                          frames=_frame_printer if frames else None)
            except BaseException:
                transaction.rollback()
                raise
            if dry_run:
                transaction.rollback()
            else:
                transaction.commit()
    except StepFailed as exc:
        click.echo(f"step failed: {exc.kind}: {exc.message}", err=True)
        sys.exit(1)
    except (BenchbookError, DatabaseBusy) as exc:
        raise click.ClickException(exc.detail) from None
    finally:
        db.engine.dispose()
    click.echo(json.dumps({k: _shown(v) for k, v in outputs.items()}, indent=2, ensure_ascii=False))


def register(group: click.Group) -> None:
    """Add ``try`` to the root group's ``plugins`` group."""
    plugins = group.commands.get("plugins")
    if isinstance(plugins, click.Group):
        plugins.add_command(try_command)
