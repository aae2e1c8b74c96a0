"""``benchbook doctor``: checks of a project folder and its database, each finding with how to fix
it, and the fixes that are safe to apply (issue #13 item 7, ``docs/maintenance.md``).

The checks, in order (:func:`examine`):

``permissions``  ``.secrets.toml`` must be 0600 (it holds the AI key); ``benchbook.toml`` must
                 not be writable by others (it names the database and the plugins run), nor the
                 project's folders by everyone. Fix: ``chmod``.
``database``     SQLite: ``PRAGMA integrity_check`` (``quick_check`` with ``quick``) and
                 ``PRAGMA foreign_key_check``; PostgreSQL: invalid indexes, data checksum
                 failures, and ``amcheck``'s ``bt_index_check`` on every index when the
                 extension is installed. Fix: by hand (restore a backup, ``REINDEX``).
``migrations``   the database's Alembic revision against the newest this benchbook knows.
                 Fix: upgrade (what the server does on start); a database newer than this
                 benchbook cannot be fixed here.
``history``      the database's triggers that keep a record's create and delete entries
                 true (migration 0017, ``persistence.entry_triggers``), checked once the database
                 is at the newest revision. Fix: create them again (entries of records whose
                 values changed while they were missing may read the values as they are now).
``counts``       SQLite: the live record counts it keeps per collection and schema, the
                 records created per day and the history entries per day (migrations 0019 to
                 0021, ``persistence.record_counts``, ``persistence.audit_days``): their
                 triggers are there and they agree with a count of the rows. Fix: create the
                 triggers again and count afresh.
``indexes``      every index of the models and one per field of an indexed type, checked
                 once the database is at the newest revision. Fix: create the missing ones.
``files``        content the database records or records use but ``files/`` lacks (missing)
                 or holds with another size (damaged); content no database row knows (stray)
                 and ``.upload-*`` temporary files left by an upload that never finished;
                 stored files no record holds (unused, a note). Fix: strays and temporary
                 files older than :data:`GRACE` are removed; missing or damaged content is
                 never invented (upload the same content again, or restore it from a backup);
                 a file any row names is never deleted.
``runs``         runs left ``running`` while no worker holds the run queue's lease (the
                 process running them stopped). Fix: the runner's own recovery
                 (:func:`benchbook.runner.queue.recover`, under the lease): ``failed``, error
                 kind ``interrupted``.
``wal``          SQLite: a write-ahead log grown past :data:`WAL_NOTE_BYTES` (a note). Fix:
                 ``PRAGMA wal_checkpoint(TRUNCATE)``.
``backups``      work folders of the project's backups that were killed (SIGKILL) before they
                 could remove them, each about the database's size, found through the pointers
                 in the project folder (:mod:`benchbook.maintenance.backup_work`); a backup
                 still running is a note. Fix: remove them (a running backup's never).
``scratch``      processes started by plugins of a benchbook process that was killed, still
                 running, and the scratch areas (``.benchbook/scratch``) of killed processes
                 (:mod:`benchbook.runner.plugin_host.processes`, ``.scratch``). Fix: kill them,
                 then remove the areas (a live process's never).

Nothing is changed unless ``fix`` is given. A finding is a problem when its severity is
``warning`` or ``error`` and it was not fixed; ``benchbook doctor`` exits non-zero then.
"""
from __future__ import annotations

import functools
import os
import re
import socket
import sqlite3
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import Connection, Engine, Index, func, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from benchbook.domain.ai.config import SECRETS_NAME
from benchbook.domain.files import SPOOL_PREFIX
from benchbook.domain.progress import Progress, silent
from benchbook.maintenance import backup_work
from benchbook.persistence import audit_days, entry_triggers, record_counts
from benchbook.persistence.db import COMMAND_WAIT, alembic_config, make_engine, upgrade, write_lock
from benchbook.persistence.field_indexes import field_index_ddl, field_index_name
from benchbook.persistence.tables import Base, Field, Job, RecordLink, StoredFile
from benchbook.runner import queue
from benchbook.runner.plugin_host import processes, scratch
from benchbook.settings.config import CONFIG_NAME, Project

GRACE = 600.0
"""Seconds a stray content file or an ``.upload-*`` temporary file is left alone: an upload may
be on its way in (its content lands before its row commits)."""
WAL_NOTE_BYTES = 64 * 1024 * 1024
"""A SQLite write-ahead log larger than this is noted (``wal`` check)."""
LISTED = 10
"""How many names a grouped finding lists."""
SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass
class Finding:
    """One result of a check: ``check`` (its name), ``severity`` (``ok``, ``note``, ``warning``,
    ``error``), ``message``, ``fix`` (how to fix it, for a person), ``repair`` (the safe fix
    :func:`examine` applies with ``fix=True``, returning what it did) and ``fixed`` (what it did)."""

    check: str
    severity: str
    message: str
    fix: str = ""
    repair: Callable[[], str] | None = None
    fixed: str | None = None

    @property
    def problem(self) -> bool:
        """A warning or an error not fixed."""
        return self.severity in ("warning", "error") and self.fixed is None


CHECKS = ("permissions", "database", "migrations", "history", "counts", "indexes", "files", "runs", "wal",
          "backups", "scratch")
"""The checks in the order :func:`examine` runs them (the module docstring says what each does)."""


def examine(project: Project, *, fix: bool = False, quick: bool = False,
            progress: Progress = silent) -> list[Finding]:
    """Run every check on ``project`` (module docstring) and, with ``fix``, apply the safe fixes
    (a fix that fails leaves its finding unfixed, the failure added to its message). Returns
    the findings in check order; never raises for what it finds. Reports
    ``progress("checks", done, len(CHECKS))`` as each check ends (a check skipped counts as done)."""
    def done(check: str) -> None:
        progress("checks", CHECKS.index(check) + 1, len(CHECKS))

    progress("checks", 0, len(CHECKS))
    findings = check_permissions(project.root)
    done("permissions")
    url = make_url(project.database_url)
    sqlite_path = Path(url.database or "") if url.get_backend_name() == "sqlite" else None
    if sqlite_path is not None and not sqlite_path.is_file():
        findings.append(Finding("database", "error", f"no database at {sqlite_path}",
                                "run `benchbook init` to create it, or `benchbook restore` a backup into a new folder"))
        progress("checks", len(CHECKS), len(CHECKS))
        return _apply(findings, fix)
    engine = make_engine(project.database_url)
    try:
        findings += _guarded("database", lambda: check_database(engine, quick=quick))
        done("database")
        migrations = _guarded("migrations", lambda: check_migrations(engine))
        findings += migrations
        if fix:
            _apply(migrations, fix)  # the other checks read the tables of the newest models
        done("migrations")
        if all(f.severity == "ok" or f.fixed for f in migrations):
            findings += _guarded("history", lambda: check_history(engine))
            done("history")
            findings += _guarded("counts", lambda: check_counts(engine))
            done("counts")
            findings += _guarded("indexes", lambda: check_indexes(engine))
        done("indexes")
        findings += _guarded("files", lambda: check_files(engine, project.files_dir))
        done("files")
        findings += _guarded("runs", lambda: check_runs(engine))
        done("runs")
        if sqlite_path is not None:
            findings += check_wal(sqlite_path)
        done("wal")
        findings += check_backups(project.root)
        done("backups")
        findings += check_scratch(project.root)
        done("scratch")
        return _apply(findings, fix)
    finally:
        engine.dispose()


def _apply(findings: list[Finding], fix: bool) -> list[Finding]:
    for finding in findings:
        if fix and finding.repair is not None and finding.fixed is None:
            try:
                finding.fixed = finding.repair()
            except (OSError, SQLAlchemyError, sqlite3.Error) as exc:
                finding.message += f" (the fix failed: {exc})"
    return findings


def _guarded(check: str, run: Callable[[], list[Finding]]) -> list[Finding]:
    try:
        return run()
    except SQLAlchemyError as exc:
        why = " ".join(str(getattr(exc, "orig", None) or exc).split())[:300]
        return [Finding(check, "error", f"could not be checked: {why}",
                        "fix the database findings first; a damaged database: restore the newest backup "
                        "(`benchbook restore FILE DIR`)")]


# ----------------------------------------------------------------------------- permissions
def check_permissions(root: Path) -> list[Finding]:
    """``.secrets.toml`` 0600, ``benchbook.toml`` not writable by group or others, the project
    folder and ``plugins/``/``workflows/`` not writable by everyone."""
    findings = []
    secrets = root / SECRETS_NAME
    if secrets.is_file():
        mode = stat.S_IMODE(secrets.stat().st_mode)
        if mode & 0o077:
            findings.append(Finding(
                "permissions", "error", f"{secrets} has mode {mode:04o}: others may read the AI key it holds",
                f"chmod 600 {secrets}", repair=_chmod_later(secrets, 0o600)))
        else:
            findings.append(Finding("permissions", "ok", f"{SECRETS_NAME} is private ({mode:04o})"))
    config = root / CONFIG_NAME
    if config.is_file():
        mode = stat.S_IMODE(config.stat().st_mode)
        if mode & 0o022:
            findings.append(Finding(
                "permissions", "warning",
                f"{config} has mode {mode:04o}: others may change which database and plugins benchbook uses",
                f"chmod go-w {config}", repair=_chmod_later(config, mode & ~0o022)))
        else:
            findings.append(Finding("permissions", "ok", f"{CONFIG_NAME} is writable by its owner only ({mode:04o})"))
    for folder in (root, root / "plugins", root / "workflows"):
        if folder.is_dir():
            mode = stat.S_IMODE(folder.stat().st_mode)
            if mode & 0o002:
                findings.append(Finding(
                    "permissions", "warning",
                    f"{folder} has mode {mode:04o}: anyone may add files there (plugins run as you)",
                    f"chmod o-w {folder}", repair=_chmod_later(folder, mode & ~0o002)))
    return findings


def _chmod_later(path: Path, mode: int) -> Callable[[], str]:
    return lambda: _chmod(path, mode)


def _chmod(path: Path, mode: int) -> str:
    os.chmod(path, mode)
    return f"chmod {mode:04o} {path}"


# -------------------------------------------------------------------------------- database
def check_database(engine: Engine, *, quick: bool = False) -> list[Finding]:
    """The database's own integrity checks (module docstring)."""
    if engine.dialect.name == "sqlite":
        return _check_sqlite(engine, quick)
    if engine.dialect.name == "postgresql":
        return _check_postgres(engine)
    return [Finding("database", "note", f"no integrity check for {engine.dialect.name}")]


def _check_sqlite(engine: Engine, quick: bool) -> list[Finding]:
    pragma = "quick_check" if quick else "integrity_check"
    restore = ("restore the newest backup into a new folder (`benchbook restore FILE DIR`), or salvage with "
               "`sqlite3 benchbook.db .recover | sqlite3 recovered.db`")
    with engine.connect() as conn:
        problems = [str(r[0]) for r in conn.exec_driver_sql(f"PRAGMA {pragma}")]
        dangling = conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
    findings = []
    if problems == ["ok"]:
        findings.append(Finding("database", "ok", f"PRAGMA {pragma}: ok"))
    else:
        shown = "; ".join(problems[:LISTED]) + (f"; … {len(problems) - LISTED} more" if len(problems) > LISTED else "")
        findings.append(Finding("database", "error", f"PRAGMA {pragma} found damage: {shown}", restore))
    if dangling:
        tables = sorted({str(r[0]) for r in dangling})
        findings.append(Finding("database", "error",
                                f"{len(dangling)} row(s) point at rows that do not exist (tables {', '.join(tables)})",
                                restore))
    else:
        findings.append(Finding("database", "ok", "PRAGMA foreign_key_check: ok"))
    return findings


def _check_postgres(engine: Engine) -> list[Finding]:
    findings = []
    with engine.connect() as conn:
        invalid = list(conn.scalars(text(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE NOT i.indisvalid AND n.nspname = current_schema()")))
        failures = conn.scalar(text("SELECT checksum_failures FROM pg_stat_database WHERE datname = current_database()"))
        amcheck = conn.scalar(text("SELECT count(*) FROM pg_extension WHERE extname = 'amcheck'"))
        broken: list[str] = []
        if amcheck:
            for name, oid in conn.execute(text(
                    "SELECT c.relname, c.oid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_am a ON a.oid = c.relam "
                    "WHERE a.amname = 'btree' AND i.indisvalid AND n.nspname = current_schema()")):
                try:
                    with conn.begin_nested():
                        conn.execute(text("SELECT bt_index_check(:oid)"), {"oid": oid})
                except SQLAlchemyError as exc:
                    broken.append(f"{name} ({' '.join(str(getattr(exc, 'orig', exc)).split())[:200]})")
        conn.rollback()
    for name in invalid:
        findings.append(Finding("database", "error", f"index {name} is invalid (a CREATE INDEX that failed)",
                                f'REINDEX INDEX "{name}" (psql)'))
    for entry in broken:
        findings.append(Finding("database", "error", f"amcheck found damage in index {entry}", "REINDEX the index (psql)"))
    if failures:
        findings.append(Finding("database", "error", f"{failures} data checksum failure(s) on this database",
                                "check the server's disk and log; restore the newest backup into a new database"))
    if not (invalid or broken or failures):
        deeper = "amcheck: every index ok" if amcheck else "install the amcheck extension for a deeper index check"
        findings.append(Finding("database", "ok", f"no invalid index, no checksum failure ({deeper})"))
    return findings


# ------------------------------------------------------------------------------ migrations
def check_migrations(engine: Engine) -> list[Finding]:
    """The database's Alembic revision against this benchbook's newest."""
    script = ScriptDirectory.from_config(alembic_config(engine.url.render_as_string(hide_password=False)))
    heads = set(script.get_heads())
    with engine.connect() as conn:
        current = set(MigrationContext.configure(conn).get_current_heads())
    if current == heads:
        return [Finding("migrations", "ok", f"at the newest revision ({', '.join(sorted(heads))})")]
    if not current:
        return [Finding("migrations", "error", "the database has no benchbook tables (never initialised)",
                        "`benchbook doctor --fix` (or `benchbook init`) creates them",
                        repair=lambda: _upgrade(engine))]
    try:
        for revision in current:
            script.get_revision(revision)
        known = True
    except CommandError:
        known = False
    if not known:
        return [Finding("migrations", "error",
                        f"the database is at revision {', '.join(sorted(current))}, which this benchbook does not "
                        "know: a newer benchbook has upgraded it", "install that newer benchbook")]
    return [Finding("migrations", "warning",
                    f"the database is at revision {', '.join(sorted(current))}; the newest is {', '.join(sorted(heads))}",
                    "`benchbook doctor --fix` upgrades it (as starting the server does); back it up first",
                    repair=lambda: _upgrade(engine))]


def _upgrade(engine: Engine) -> str:
    upgrade(engine)
    return "upgraded the database to the newest revision"


# --------------------------------------------------------------------------------- history
def check_history(engine: Engine) -> list[Finding]:
    """The triggers of ``persistence.entry_triggers`` are all there (the database at the newest
    revision)."""
    with engine.connect() as conn:
        missing = sorted(set(entry_triggers.TRIGGERS) - entry_triggers.present(conn))
    if not missing:
        return [Finding("history", "ok", "the triggers keeping record history are in place")]
    return [Finding("history", "error",
                    f"trigger(s) {', '.join(missing)} missing: a record's create and delete entries are not kept "
                    "when its values change (entries of records changed meanwhile read their values as they are now)",
                    "`benchbook doctor --fix` creates them again", repair=lambda: _recreate_triggers(engine))]


def _recreate_triggers(engine: Engine) -> str:
    with engine.begin() as conn:
        entry_triggers.recreate(conn)
    return "created the history triggers again"


def expected_indexes(conn: Connection) -> dict[str, Callable[[Connection], None]]:
    """Every index the database should have at the newest revision → how to create it: the
    models' (``tables``) and one per field of an indexed type (``field_indexes.field_index_ddl``, the
    fields of the trash included: theirs go when they are purged)."""
    out: dict[str, Callable[[Connection], None]] = {}
    for table in Base.metadata.sorted_tables:
        for index in table.indexes:
            out[str(index.name)] = functools.partial(_create_model_index, index)
    for fid, type_ in conn.execute(select(Field.id, Field.type)):
        ddl = field_index_ddl(conn.dialect, fid, type_)
        if ddl:
            out[field_index_name(fid)] = functools.partial(_run_ddl, ddl)
    return out


def _create_model_index(index: Index, conn: Connection) -> None:
    index.create(conn)  # known to be missing (checkfirst would reflect, and warn on expression indexes)


def _run_ddl(ddl: str, conn: Connection) -> None:
    conn.exec_driver_sql(ddl)


def present_indexes(conn: Connection) -> set[str]:
    """The names of the indexes the database at ``conn`` has (its current schema on PostgreSQL)."""
    sql = ("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()" if conn.dialect.name == "postgresql"
           else "SELECT name FROM sqlite_master WHERE type = 'index'")
    return {str(name) for name in conn.execute(text(sql)).scalars()}


def check_indexes(engine: Engine) -> list[Finding]:
    """Every index of the models and of the fields is there (a lost one leaves the data whole but
    makes the pages and filters that use it read every record)."""
    with engine.connect() as conn:
        missing = sorted(set(expected_indexes(conn)) - present_indexes(conn))
    if not missing:
        return [Finding("indexes", "ok", "every index is in place")]
    shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    return [Finding("indexes", "warning", f"{len(missing)} index(es) missing: {shown} (the pages and filters that "
                    "use them read every record)", "`benchbook doctor --fix` creates them again",
                    repair=lambda: _create_indexes(engine))]


def _create_indexes(engine: Engine) -> str:
    with engine.begin() as conn:
        wanted = expected_indexes(conn)
        missing = sorted(set(wanted) - present_indexes(conn))
        for name in missing:
            wanted[name](conn)
    return f"created {len(missing)} index(es) again"


def check_counts(engine: Engine) -> list[Finding]:
    """The kept record counts, creation days and history days (migrations 0019 to 0021, SQLite)
    have their triggers and agree with the records and entries."""
    if not record_counts.kept(engine.dialect.name):
        return [Finding("counts", "ok", "PostgreSQL counts the records when asked (nothing kept to check)")]
    with engine.connect() as conn:
        missing = sorted({*record_counts.TRIGGERS, *record_counts.DAY_TRIGGERS} - record_counts.present(conn))
        missing += sorted(set(audit_days.TRIGGERS) - audit_days.present(conn))
        wrong = record_counts.drift(conn) + audit_days.drift(conn)
    if not (missing or wrong):
        return [Finding("counts", "ok", "the kept record counts agree with the records")]
    what = [f"trigger(s) {', '.join(missing)} missing"] if missing else []
    what += [f"{wrong} kept count(s) differ from the records"] if wrong else []
    return [Finding("counts", "warning", "; ".join(what) + " (collection lists, record-counts and the growth and "
                    "history charts show them)",
                    "`benchbook doctor --fix` creates the triggers again and counts the records afresh",
                    repair=lambda: _recount(engine))]


def _recount(engine: Engine) -> str:
    with engine.begin() as conn:
        record_counts.repair(conn)
        audit_days.repair(conn)
    return "counted the records afresh"


# ----------------------------------------------------------------------------------- files
def check_files(engine: Engine, files_dir: Path, *, now: float | None = None) -> list[Finding]:
    """The files folder against the ``files`` rows and the file values of records."""
    now = time.time() if now is None else now
    with Session(engine) as s:
        rows = {sha: (name, size) for sha, name, size in s.execute(
            select(StoredFile.sha256, StoredFile.filename, StoredFile.size))}
        users = {sha: int(n) for sha, n in s.execute(
            select(RecordLink.target_id, func.count(func.distinct(RecordLink.source_id)))
            .where(RecordLink.kind == "file").group_by(RecordLink.target_id))}
    content, temps, foreign = _scan(files_dir)
    findings = []
    for sha in sorted((rows.keys() | users.keys()) - content.keys()):
        name = rows[sha][0] if sha in rows else "no files row"
        findings.append(Finding(
            "files", "error", f"file {sha} ({name}, used by {users.get(sha, 0)} record(s)) is missing from {files_dir}",
            "upload the same content again (`benchbook files upload --file PATH`: it is stored under the same sha256), "
            f"or copy {sha[:2]}/{sha} back from a backup"))
    for sha in sorted(rows.keys() & content.keys()):
        expected, found = rows[sha][1], content[sha].st_size
        if expected != found:
            findings.append(Finding(
                "files", "error", f"file {sha} ({rows[sha][0]}) is {found} bytes on disk, {expected} recorded (damaged)",
                f"copy {sha[:2]}/{sha} back from a backup, or delete it and upload the original again"))
    stray = {sha: st for sha, st in content.items() if sha not in rows and sha not in users}
    findings += _leftovers("content no database row knows (a rolled-back upload, or a file whose delete did not "
                           "finish)", files_dir, stray, now)
    findings += _leftovers("temporary upload file(s) left by uploads that never finished", files_dir, temps, now)
    unused = sorted(rows.keys() - users.keys())
    if unused:
        findings.append(Finding(
            "files", "note", f"{len(unused)} stored file(s) no record holds: {_listed([u[:12] for u in unused])}",
            "`benchbook files delete SHA256` (the whole hash; shown are its first 12 characters) removes one you "
            "no longer need (never done by doctor)"))
    if foreign:
        findings.append(Finding("files", "note", f"{len(foreign)} entr(ies) in {files_dir} that are not benchbook's: "
                                f"{_listed(sorted(foreign))}", "left alone"))
    if not any(f.severity in ("warning", "error") for f in findings):
        findings.insert(0, Finding("files", "ok", f"{len(content)} content file(s) for {len(rows)} stored file(s), "
                                   "none missing or damaged"))
    return findings


def _scan(files_dir: Path) -> tuple[dict[str, os.stat_result], dict[str, os.stat_result], list[str]]:
    """``(content by sha256, temporary files by path, other entries)`` of the files folder."""
    content: dict[str, os.stat_result] = {}
    temps: dict[str, os.stat_result] = {}
    foreign: list[str] = []
    if not files_dir.is_dir():
        return content, temps, foreign
    for entry in files_dir.iterdir():
        if entry.name.startswith(SPOOL_PREFIX) and entry.is_file():
            temps[str(entry)] = entry.stat()
        elif len(entry.name) == 2 and entry.is_dir():
            for item in entry.iterdir():
                if SHA256.fullmatch(item.name) and item.name[:2] == entry.name and item.is_file():
                    content[item.name] = item.stat()
                else:
                    foreign.append(f"{entry.name}/{item.name}")
        else:
            foreign.append(entry.name)
    return content, temps, foreign


def _leftovers(what: str, files_dir: Path, found: dict[str, os.stat_result], now: float) -> list[Finding]:
    """A warning for the ``found`` files older than :data:`GRACE`, whose fix removes them."""
    old = {name: st for name, st in found.items() if now - st.st_mtime > GRACE}
    if not old:
        return []
    paths = [Path(name) if os.sep in name else files_dir / name[:2] / name for name in sorted(old)]
    size = sum(st.st_size for st in old.values())

    def remove() -> str:
        for path in paths:
            path.unlink(missing_ok=True)
        return f"removed {len(paths)} file(s), {size} bytes"

    return [Finding("files", "warning", f"{len(old)} file(s), {size} bytes, of {what}: "
                    f"{_listed([p.name for p in paths])}", "`benchbook doctor --fix` removes them", repair=remove)]


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:LISTED])
    return shown + (f", … {len(names) - LISTED} more" if len(names) > LISTED else "")


# ------------------------------------------------------------------------------------ runs
def check_runs(engine: Engine) -> list[Finding]:
    """Runs left ``running`` while no worker holds the run queue's lease."""
    with Session(engine) as s:
        running = list(s.scalars(select(Job.id).where(Job.status == "running").order_by(Job.created_at)))
    if not running:
        return [Finding("runs", "ok", "no run is left running")]
    holder = queue.live_holder(engine)
    if holder is not None:
        return [Finding("runs", "ok", f"{len(running)} run(s) running under the worker {holder}")]
    return [Finding("runs", "error",
                    f"{len(running)} run(s) left running with no worker holding the run queue (the process "
                    f"running them stopped): {_listed(running)}",
                    "`benchbook doctor --fix` marks them failed with error kind `interrupted`, as the next worker "
                    "to start does; rerun them with `benchbook jobs rerun`", repair=lambda: recover_runs(engine))]


def recover_runs(engine: Engine) -> str:
    """Take the run queue's lease (as a worker that just started would), mark the runs left
    ``running`` failed with :func:`benchbook.runner.queue.recover`, give the lease back. Says
    what it did; does nothing when a worker holds the lease meanwhile (it recovers them)."""
    holder = f"doctor:{socket.gethostname()}:{os.getpid()}"
    held, _ = queue.acquire(engine, holder, 60.0)
    if not held:
        raise OSError("a worker took the run queue meanwhile; it marks the runs itself")
    try:
        with Session(engine) as s, s.begin():
            write_lock(s, COMMAND_WAIT)  # reads, then writes: the database's one writer first
            ids = queue.recover(s)
    finally:
        queue.release(engine, holder)
    return f"marked {len(ids)} run(s) failed (interrupted)"


# ------------------------------------------------------------------------------------- wal
def check_wal(database: Path) -> list[Finding]:
    """A SQLite write-ahead log grown past :data:`WAL_NOTE_BYTES`."""
    wal = database.with_name(database.name + "-wal")
    size = wal.stat().st_size if wal.is_file() else 0
    if size <= WAL_NOTE_BYTES:
        return [Finding("wal", "ok", f"write-ahead log {size} bytes")]

    def checkpoint() -> str:
        conn = sqlite3.connect(database, timeout=2)
        try:
            busy, pages, done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        finally:
            conn.close()
        if busy:
            raise OSError(f"readers kept it busy ({done} of {pages} pages copied); try again when the server is idle")
        return f"checkpointed {done} page(s); the log is {wal.stat().st_size if wal.exists() else 0} bytes now"

    return [Finding("wal", "note", f"the write-ahead log {wal} is {size} bytes",
                    "`benchbook doctor --fix` checkpoints it into the database (PRAGMA wal_checkpoint(TRUNCATE))",
                    repair=checkpoint)]


# --------------------------------------------------------------------------------- backups
def check_backups(root: Path) -> list[Finding]:
    """Work folders of ``root``'s backups left by a backup that was killed (stale), or of one
    running now (a note), and those whose state cannot be told (a note, left alone)."""
    found = backup_work.project_leftovers(root)
    stale = [w for w in found if w.state == "stale"]
    findings = []
    for w in found:
        if w.state != "stale":
            owner = f"pid {w.owner.get('pid')} on {w.owner.get('host')}, since {w.owner.get('started')}" \
                if w.owner else "no owner.json yet"
            what = "a backup running now" if w.state == "running" else "a backup whose lock cannot be tried"
            findings.append(Finding("backups", "note", f"{w.folder} is the work folder of {what} ({owner})",
                                    "left alone"))
    if stale:
        size = sum(w.size for w in stale)
        findings.append(Finding(
            "backups", "warning", f"{len(stale)} work folder(s) of backups that were killed, {size} bytes: "
            f"{_listed([str(w.folder or w.pointer) for w in stale])}",
            "`benchbook doctor --fix` removes them (so does the next backup written to the same folder)",
            repair=lambda: "removed {} work folder(s), {} bytes".format(*backup_work.remove(stale))))
    if not findings:
        findings.append(Finding("backups", "ok", "no work folder of a killed backup is left"))
    return findings


# --------------------------------------------------------------------------------- scratch
def check_scratch(root: Path) -> list[Finding]:
    """Processes left running by plugins of killed benchbook processes, and the scratch areas
    those processes left in ``root/.benchbook/scratch`` (issue 33 finding 8)."""
    findings = []
    left = processes.orphans(root)
    if left:
        findings.append(Finding(
            "scratch", "warning", f"{len(left)} process(es) started by plugins of a benchbook process that was "
            f"killed are still running: {_listed([f'pid {o.pid} ({o.command})' for o in left])}",
            "`benchbook doctor --fix` kills them (so does the next server start or drain of runs)",
            repair=lambda: f"killed {len(processes.reap(root))} process(es)"))
    areas = scratch.stale(scratch.root_of(root))
    if areas:
        size = sum(a.size for a in areas)
        findings.append(Finding(
            "scratch", "warning", f"{len(areas)} scratch folder(s) of benchbook processes that were killed, "
            f"{size} bytes: {_listed([str(a.root / a.name) for a in areas])}",
            "`benchbook doctor --fix` removes them (so does the next server start or drain of runs)",
            repair=lambda: "removed {} scratch folder(s), {} bytes".format(*scratch.remove(areas))))
    if not findings:
        findings.append(Finding("scratch", "ok", "no plugin process or scratch folder of a killed benchbook is left"))
    return findings
