"""Issue 36 item 4: the long local commands (``backup``, ``restore``, ``doctor``) report progress
through a callback (``progress(stage, done, total)``, domain never prints) and draw a bar per stage
on a terminal; piped, their output is what it was."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from benchbook.cli.main import build_cli
from benchbook.maintenance import backup as backups
from benchbook.maintenance import doctor
from benchbook.settings.config import Project
from tests.test_backup import build_some_history, target_url  # noqa: F401  (a fixture)


class Recorder:
    """A :data:`benchbook.domain.progress.Progress` that keeps every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int]] = []

    def __call__(self, stage: str, done: int, total: int) -> None:
        self.calls.append((stage, done, total))

    def stages(self) -> list[str]:
        return list(dict.fromkeys(stage for stage, _, _ in self.calls))

    def of(self, stage: str) -> list[tuple[int, int]]:
        return [(done, total) for s, done, total in self.calls if s == stage]


def test_backup_and_restore_report_each_stage(api: Any, tmp_path: Path, target_url: str | None) -> None:  # noqa: F811
    build_some_history(api)  # 5 files
    made = Recorder()
    backups.backup(api.project, tmp_path / "lab.tar.gz", progress=made)
    assert made.stages() == ["copying the database", "archiving files"]
    assert made.of("copying the database") == [(0, 1), (1, 1)]
    assert made.of("archiving files") == [(n, 5) for n in range(6)]

    restored = Recorder()
    backups.restore(tmp_path / "lab.tar.gz", tmp_path / "restored", database_url=target_url, progress=restored)
    assert restored.stages() == ["unpacking", "checking files", "checking the database"]
    unpacked = restored.of("unpacking")
    assert unpacked[0][0] == 0 and unpacked[-1][0] == unpacked[-1][1] > 5  # files, database, settings, manifest
    assert restored.of("checking files") == [(n, 5) for n in range(6)]
    assert restored.of("checking the database") == [(0, 1), (1, 1)]


def test_doctor_reports_every_check(tmp_project: Project) -> None:
    seen = Recorder()
    doctor.examine(tmp_project, progress=seen)
    assert seen.stages() == ["checks"]
    counts = seen.of("checks")
    assert counts[0] == (0, len(doctor.CHECKS)) and counts[-1] == (len(doctor.CHECKS), len(doctor.CHECKS))
    assert [done for done, _ in counts] == sorted(done for done, _ in counts)


def run(project: Project, *args: str) -> Result:
    return CliRunner().invoke(build_cli(), ["--project", str(project.root), *args])


@pytest.fixture
def project_with_files(tmp_project: Project, tmp_path: Path) -> Project:
    for i in range(3):
        upload = tmp_path / f"raw-{i}.csv"
        upload.write_text(f"depth,value\n{i},{i * 2}\n")
        out = run(tmp_project, "files", "upload", "--file", str(upload))
        assert out.exit_code == 0, out.output
    return tmp_project


def test_on_a_terminal_backup_restore_and_doctor_draw_their_stages(
        project_with_files: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich: stderr is a terminal
    backup = run(project_with_files, "backup", str(tmp_path / "lab.tar"))
    assert backup.exit_code == 0, backup.output
    assert "copying the database" in backup.stderr and "1/1" in backup.stderr
    assert "archiving files" in backup.stderr and "3/3" in backup.stderr
    assert backup.stdout.startswith(f"{tmp_path / 'lab.tar'}: ")  # the report is unchanged, on stdout

    restore = run(project_with_files, "restore", str(tmp_path / "lab.tar"), str(tmp_path / "restored"))
    assert restore.exit_code == 0, restore.output
    for stage in ("unpacking", "checking files", "checking the database"):
        assert stage in restore.stderr
    assert "3/3" in restore.stderr and "restored the backup of" in restore.stdout

    checked = run(project_with_files, "doctor")
    assert "checks" in checked.stderr and f"{len(doctor.CHECKS)}/{len(doctor.CHECKS)}" in checked.stderr
    assert checked.stdout.startswith("benchbook doctor: ")


def test_piped_they_draw_nothing(project_with_files: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TTY_COMPATIBLE", "0")
    backup = run(project_with_files, "backup", str(tmp_path / "lab.tar"))
    restore = run(project_with_files, "restore", str(tmp_path / "lab.tar"), str(tmp_path / "restored"))
    checked = run(project_with_files, "doctor")
    assert backup.exit_code == 0 and restore.exit_code == 0, backup.output + restore.output
    assert backup.stderr == restore.stderr == checked.stderr == ""
