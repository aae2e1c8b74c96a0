"""Start-up cost (issue 14 item 15): opening a database already at the newest migration and
building the app for a one-off command import neither Alembic nor the run worker; the head
revision read from the migration scripts is Alembic's own."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from alembic.script import ScriptDirectory

from benchbook.persistence.db import (
    alembic_config,
    current_revision,
    head_revision,
    make_engine,
    open_database,
)


def test_head_revision_is_alembics() -> None:
    heads = ScriptDirectory.from_config(alembic_config("sqlite://")).get_heads()
    assert [head_revision()] == heads


def test_a_new_database_is_upgraded_and_then_read_at_head(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'new.db'}"
    engine = make_engine(url)
    assert current_revision(engine) is None  # no alembic_version table yet
    engine.dispose()
    db = open_database(url)
    assert current_revision(db.engine) == head_revision()
    db.engine.dispose()


_PROBE = """
import sys
from benchbook.settings.config import Project
from benchbook.http.app import create_app
project = Project.locate(sys.argv[1])
app = create_app(project, only_paths=frozenset({"/health"}))
loaded = sorted(m for m in ("alembic", "mako", "benchbook.runner.worker", "benchbook.domain.history.storage")
                if m in sys.modules)
print(",".join(loaded))
"""


def _loaded_by_a_command(project: Path) -> str:
    done = subprocess.run([sys.executable, "-c", _PROBE, str(project)], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_a_command_on_a_database_at_head_imports_no_alembic_nor_worker(tmp_path: Path) -> None:
    project = tmp_path / "project"
    subprocess.run([sys.executable, "-m", "benchbook.cli.main", "--project", str(project), "init"],
                   capture_output=True, text=True, check=True)
    assert _loaded_by_a_command(project) == ""


def test_a_database_behind_head_is_upgraded_on_open(tmp_path: Path) -> None:
    from alembic import command

    url = f"sqlite:///{tmp_path / 'old.db'}"
    command.upgrade(alembic_config(url), "0007_growth_index")
    engine = make_engine(url)
    assert current_revision(engine) == "0007_growth_index"
    engine.dispose()
    db = open_database(url)
    assert current_revision(db.engine) == head_revision()
    db.engine.dispose()


_IMPORT_PROBE = """
import sys
from benchbook.cli.main import main
sys.argv = ["benchbook", "--project", sys.argv[1], "import", sys.argv[2], "--collection", "days",
            "--schema", "day", "--create-schema"]
try:
    main()
except SystemExit as exc:
    assert not exc.code, exc.code
print(",".join(m for m in ("numpy", "jsonschema", "benchbook.runner.worker") if m in sys.modules))
"""


def test_a_small_import_loads_neither_numpy_nor_the_worker(tmp_path: Path) -> None:
    """A few rows' ids are made one by one (``ids.new_ids``): loading numpy for them cost a
    two-row ``benchbook import`` 0.13 s of its second and a half (docs/performance.md, I9).
    Nor does an import that queues no run load the run worker, or jsonschema for workflows it
    does not check (together 0.15 s)."""
    project = tmp_path / "project"
    subprocess.run([sys.executable, "-m", "benchbook.cli.main", "--project", str(project), "init"],
                   capture_output=True, text=True, check=True)
    csv = tmp_path / "days.csv"
    csv.write_text("day,rain\n2026-01-01,0.5\n2026-01-02,1.5\n")
    done = subprocess.run([sys.executable, "-c", _IMPORT_PROBE, str(project), str(csv)],
                          capture_output=True, text=True, check=True)
    assert "created 2" in done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == ""
