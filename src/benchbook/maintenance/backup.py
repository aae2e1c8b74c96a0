"""Backups of a project folder, and their restore into a new one (issue #13 item 6,
``docs/maintenance.md``).

A backup is one tar archive (gzip-compressed when its name ends in ``.gz`` or ``.tgz``)::

    benchbook.db        SQLite: a copy made with SQLite's online backup API in one step, i.e.
                        one read transaction: a consistent snapshot while the server writes
    database.pgdump     PostgreSQL: ``pg_dump --format=custom`` of an exported snapshot
    files/ab/<sha256>   the content of every file that database copy records or a record uses
    benchbook.toml, workflows/, plugins/
    .secrets.toml       only when asked for (``with_secrets``): it holds the AI key
    backup.json         the manifest (last): format, benchbook version, ``created_at`` (when the
                        database snapshot was taken, not when the archive was finished), database
                        kind, migration revision, rows per table and the files (sha256) as of the
                        snapshot, the ones that could not be read

The archive is created mode 0600 whatever the umask (it holds the whole database, and with
``with_secrets`` the AI key); it is written in a work folder next to it
(:mod:`benchbook.maintenance.backup_work`: removed on every way out, SIGTERM included, and swept
by the next backup or ``benchbook doctor --fix`` after a SIGKILL) and renamed into place once
complete.

The rows are counted and the files listed in the same snapshot as the database copy (SQLite:
on the copy; PostgreSQL: in the transaction whose snapshot ``pg_dump`` is given), so a restore
can check it got exactly that. Content files are immutable (named by their sha256), so copying
them after the snapshot is safe; each is hashed on its way into the archive and one whose
content no longer matches its name is reported, not archived.

A restore unpacks into a new folder (refusing one that is not empty), checks every file's
sha256, the database's integrity and its rows per table against the manifest, and only then
moves the folder into place: a failed restore leaves nothing behind (a PostgreSQL restore runs
``pg_restore --single-transaction``).
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import sqlite3
import subprocess
import tarfile
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, BinaryIO

from sqlalchemy import Connection, create_engine, inspect, text
from sqlalchemy.engine import make_url

from benchbook import __version__
from benchbook.domain.ai.config import SECRETS_NAME
from benchbook.domain.files import SPOOL_PREFIX
from benchbook.domain.progress import Progress, silent
from benchbook.maintenance import MaintenanceError, backup_work
from benchbook.persistence.tables import Base
from benchbook.settings.config import CONFIG_NAME, Project

FORMAT = 1
"""The archive layout's version, in the manifest."""
MANIFEST = "backup.json"
SQLITE_NAME = "benchbook.db"
PG_NAME = "database.pgdump"
FOLDERS = ("workflows", "plugins")
"""Project sub-folders archived as they are (``__pycache__`` left out)."""
CHUNK = 1 << 20


@dataclass
class BackupReport:
    """What :func:`backup` wrote: the ``archive`` and its ``size`` (bytes), the ``database``
    kind (``sqlite``/``postgresql``), its migration ``revision``, ``tables`` (rows per table),
    ``files`` archived and their ``file_bytes``, and ``unreadable`` files (sha256 → why: missing
    on disk, or content that no longer matches its name), ``checkpoint`` (SQLite: the
    ``wal_checkpoint(TRUNCATE)`` result ``(busy, wal pages, checkpointed pages)`` taken first),
    ``created_at`` (when the snapshot was taken, UTC) and ``swept`` (work folders of killed
    backups removed from the archive's folder first, :func:`backup_work.sweep`)."""

    archive: Path
    size: int
    database: str
    revision: str | None
    tables: dict[str, int]
    files: int
    file_bytes: int
    unreadable: dict[str, str] = field(default_factory=dict)
    checkpoint: tuple[int, int, int] | None = None
    created_at: datetime | None = None
    swept: list[backup_work.Leftover] = field(default_factory=list)


@dataclass
class RestoreReport:
    """What :func:`restore` made: the project ``directory``, the ``database`` kind, ``tables``
    (rows per table, equal to the backup's), ``files`` restored (each sha256 checked) and the
    manifest's ``created_at``."""

    directory: Path
    database: str
    tables: dict[str, int]
    files: int
    created_at: str


# ---------------------------------------------------------------------------------- backup
def backup(project: Project, archive: Path, *, with_secrets: bool = False,
           progress: Progress = silent) -> BackupReport:
    """Write a backup of ``project`` to ``archive`` (a new file; see the module docstring),
    reporting ``progress("copying the database", 0|1, 1)`` and ``progress("archiving files",
    done, total)`` (content files, one call per file).

    The archive is written next to its final name (mode 0600) and moved there once complete,
    so a failed backup leaves no partial archive; its work folder goes whichever way the backup
    ends, SIGINT, SIGTERM and SIGHUP included (they end it, as ``KeyboardInterrupt`` and
    ``SystemExit(128 + signal)``). Raises :class:`MaintenanceError` when ``archive`` exists or
    sits inside the project's archived folders, the SQLite database is missing, its copy fails
    the integrity check, or (PostgreSQL) ``pg_dump`` is not on PATH or fails."""
    archive = Path(archive).expanduser().resolve()
    if archive.exists():
        raise MaintenanceError(f"{archive} exists already; name a new file for the backup")
    if not archive.parent.is_dir():
        raise MaintenanceError(f"{archive.parent} is not a folder")
    for inside in (project.files_dir, *(project.root / name for name in FOLDERS)):
        if archive.is_relative_to(inside.resolve()):
            raise MaintenanceError(f"{archive} is inside {inside}, which the backup archives; put it elsewhere")
    url = make_url(project.database_url)
    with backup_work.exits_on_signals(), backup_work.work_folder(archive.parent, project.root, archive) as folder:
        work = folder.path
        checkpoint = None
        progress("copying the database", 0, 1)
        if url.get_backend_name() == "sqlite":
            kind, dump = "sqlite", work / SQLITE_NAME
            checkpoint, taken_at = sqlite_snapshot(Path(url.database or ""), dump)
            engine = create_engine(f"sqlite:///{dump}")
            try:
                with engine.connect() as conn:
                    revision, tables, shas = census(conn)
            finally:
                engine.dispose()
        elif url.get_backend_name() == "postgresql":
            kind, dump = "postgresql", work / PG_NAME
            revision, tables, shas, taken_at = pg_snapshot(project.database_url, dump)
        else:
            raise MaintenanceError(f"cannot back up a {url.get_backend_name()} database")
        partial = work / "archive.partial"
        with _create_private(partial) as raw, tarfile.open(
                name=str(archive), fileobj=raw, mode="w:gz" if archive.name.endswith((".gz", ".tgz")) else "w") as tar:
            tar.add(dump, arcname=dump.name)
            dump.unlink()  # the disk space it took is needed no longer
            progress("copying the database", 1, 1)
            files, file_bytes, unreadable = _add_files(tar, project.files_dir, shas, progress)
            _add_settings(tar, project.root, with_secrets)
            manifest = {"format": FORMAT, "benchbook": __version__, "created_at": taken_at.isoformat(),
                        "database": kind, "revision": revision, "tables": tables,
                        "files": sorted(shas - set(unreadable)), "unreadable": unreadable,
                        "secrets": with_secrets and (project.root / SECRETS_NAME).is_file()}
            _add_bytes(tar, MANIFEST, json.dumps(manifest, indent=1).encode())
        os.replace(partial, archive)
    return BackupReport(archive=archive, size=archive.stat().st_size, database=kind, revision=revision,
                        tables=tables, files=files, file_bytes=file_bytes, unreadable=unreadable,
                        checkpoint=checkpoint, created_at=taken_at, swept=folder.swept)


def _create_private(path: Path) -> BinaryIO:
    """A new file at ``path``, open for writing, mode 0600 from its creation whatever the umask
    (``fchmod`` before any byte is written). Raises ``FileExistsError`` when it exists."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, 0o600)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "wb")


def sqlite_snapshot(source: Path, copy: Path) -> tuple[tuple[int, int, int] | None, datetime]:
    """Copy the SQLite database ``source`` to ``copy`` with the online backup API in a single
    step (one read transaction: a consistent snapshot, writers go on meanwhile in WAL mode) and
    check the copy (``PRAGMA integrity_check``). First checkpoints the WAL (``TRUNCATE``, waiting
    at most 2 s for readers: best effort, so the WAL does not keep growing and the copy reads the
    main file). Returns that checkpoint's ``(busy, wal pages, checkpointed pages)`` and the time
    (UTC) the snapshot was taken: just before the copy's read transaction starts. Raises
    :class:`MaintenanceError` when ``source`` is missing or the copy is not intact."""
    if not source.is_file():
        raise MaintenanceError(f"no database at {source}: nothing to back up (run `benchbook init`)")
    src = sqlite3.connect(source, timeout=30)
    try:
        src.execute("PRAGMA busy_timeout=2000")
        row = src.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        src.execute("PRAGMA busy_timeout=30000")
        dst = sqlite3.connect(copy)
        try:
            taken_at = datetime.now(UTC)
            src.backup(dst)  # pages=-1: every page in one step
            problems = [r[0] for r in dst.execute("PRAGMA integrity_check").fetchall()]
        finally:
            dst.close()
    finally:
        src.close()
    if problems != ["ok"]:
        raise MaintenanceError(f"the copy of {source} is not intact ({'; '.join(problems[:5])}); "
                               "run `benchbook doctor` on the project")
    return ((int(row[0]), int(row[1]), int(row[2])) if row else None), taken_at


def census(conn: Connection) -> tuple[str | None, dict[str, int], set[str]]:
    """``(migration revision, rows per table, sha256 of every file recorded or used)`` of the
    database ``conn`` reads (the tables of the current models that exist there)."""
    present = set(inspect(conn).get_table_names())
    revision = conn.scalar(text("SELECT version_num FROM alembic_version")) if "alembic_version" in present else None
    tables = {t.name: int(conn.scalar(text(f'SELECT count(*) FROM "{t.name}"')) or 0)
              for t in Base.metadata.sorted_tables if t.name in present}
    shas: set[str] = set()
    if "files" in present:
        shas.update(conn.scalars(text("SELECT sha256 FROM files")))
    if "record_links" in present:
        shas.update(conn.scalars(text("SELECT target_id FROM record_links WHERE kind = 'file'")))
    return (str(revision) if revision else None), tables, shas


def pg_snapshot(url: str, dump: Path) -> tuple[str | None, dict[str, int], set[str], datetime]:
    """Dump the PostgreSQL database at ``url`` to ``dump`` with ``pg_dump --format=custom``
    from a snapshot exported by a repeatable-read transaction, in which the :func:`census` is
    taken too (so both see the same data while writers go on). Returns the census and the time
    (UTC) the snapshot was taken (as its export returned). Raises
    :class:`MaintenanceError` without ``pg_dump`` or when it fails."""
    pg_dump = _tool("pg_dump")
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            conn = conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                snapshot = conn.scalar(text("SELECT pg_export_snapshot()"))
                taken_at = datetime.now(UTC)
                found = census(conn)
                _run_tool([pg_dump, "--format=custom", "--no-owner", "--no-privileges", f"--snapshot={snapshot}",
                           f"--file={dump}"], url)
    finally:
        engine.dispose()
    return (*found, taken_at)


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, int(datetime.now(UTC).timestamp())
    tar.addfile(info, io.BytesIO(data))


def _add_files(tar: tarfile.TarFile, files_dir: Path, shas: set[str],
               progress: Progress = silent) -> tuple[int, int, dict[str, str]]:
    """Archive the content of ``shas``; returns ``(files, bytes, unreadable)``, reporting each
    file done to ``progress`` (stage ``"archiving files"``). Each content file
    is hashed first and left out (listed in ``unreadable``) when missing or when it no longer
    hashes to its name: a tar member cannot be taken back, and content files never change in
    place, so the second read (from the page cache, mostly) archives what was checked."""
    count = size = 0
    unreadable: dict[str, str] = {}
    for done, sha in enumerate(sorted(shas)):
        progress("archiving files", done, len(shas))
        path = files_dir / sha[:2] / sha
        try:
            with path.open("rb") as fh:
                if _sha256(fh) != sha:
                    unreadable[sha] = "its content does not match its sha256 (damaged)"
                    continue
                fh.seek(0)
                info = tar.gettarinfo(fileobj=fh, arcname=f"files/{sha[:2]}/{sha}")
                info.mode = 0o644
                tar.addfile(info, fh)
        except FileNotFoundError:
            unreadable[sha] = "missing from the files folder"
            continue
        count += 1
        size += info.size
    progress("archiving files", len(shas), len(shas))
    return count, size, unreadable


def _sha256(fh: IO[bytes]) -> str:
    digest = hashlib.sha256()
    while chunk := fh.read(CHUNK):
        digest.update(chunk)
    return digest.hexdigest()


def _add_settings(tar: tarfile.TarFile, root: Path, with_secrets: bool) -> None:
    """``benchbook.toml``, ``workflows/``, ``plugins/`` (no ``__pycache__``) and, when asked,
    ``.secrets.toml``."""
    if (root / CONFIG_NAME).is_file():
        tar.add(root / CONFIG_NAME, arcname=CONFIG_NAME)
    for name in FOLDERS:
        if (root / name).is_dir():
            tar.add(root / name, arcname=name, filter=_skip_caches)
    if with_secrets and (root / SECRETS_NAME).is_file():
        tar.add(root / SECRETS_NAME, arcname=SECRETS_NAME)


def _skip_caches(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    parts = Path(info.name).parts
    return None if "__pycache__" in parts or any(p.startswith(SPOOL_PREFIX) for p in parts) else info


# --------------------------------------------------------------------------------- restore
def restore(archive: Path, directory: Path, *, database_url: str | None = None,
            progress: Progress = silent) -> RestoreReport:
    """Restore the backup ``archive`` into the new project folder ``directory``, reporting
    ``progress("unpacking", done, members)``, ``progress("checking files", done, files)`` and
    ``progress("checking the database", 0|1, 1)``.

    A SQLite backup becomes ``directory/benchbook.db`` (``[database] url`` is removed from the
    restored ``benchbook.toml`` so the project uses it); a PostgreSQL backup needs
    ``database_url``, an empty PostgreSQL database it is restored into (``pg_restore``), which
    the restored ``benchbook.toml`` then names. Every file is checked against its sha256 and
    the rows per table against the manifest before the folder is moved into place.

    Raises :class:`MaintenanceError` when ``directory`` exists and is not empty, ``archive`` is
    not a benchbook backup (or a newer format), a check fails, or the database arguments do not
    fit the backup."""
    archive = Path(archive).expanduser().resolve()
    directory = Path(directory).expanduser().resolve()
    if not archive.is_file():
        raise MaintenanceError(f"no backup at {archive}")
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise MaintenanceError(f"{directory} is not an empty folder; restore into a new one")
    try:
        with tarfile.open(archive, "r:*") as tar:
            return _restore_from(tar, archive, directory, database_url, progress)
    except tarfile.TarError as exc:
        raise MaintenanceError(f"{archive} is not a readable backup archive ({exc})") from None


def _restore_from(tar: tarfile.TarFile, archive: Path, directory: Path, database_url: str | None,
                  progress: Progress) -> RestoreReport:
    manifest = _manifest(tar, archive)
    kind = manifest["database"]
    if kind == "postgresql" and not database_url:
        raise MaintenanceError("this backup holds a PostgreSQL database: pass --database-url with an empty "
                               "PostgreSQL database to restore it into")
    if kind == "sqlite" and database_url:
        raise MaintenanceError("this backup holds a SQLite database (benchbook.db); --database-url only "
                               "applies to PostgreSQL backups")
    directory.parent.mkdir(parents=True, exist_ok=True)
    work = directory.parent / f".{directory.name}.restore-{uuid.uuid4().hex[:12]}"
    work.mkdir()  # (not mkdtemp: the restored folder gets the usual mode, not 0700)
    try:
        _extract(tar, work, progress)
        (work / MANIFEST).unlink()
        _check_files(work / "files", manifest["files"], progress)
        for name in ("files", *FOLDERS):
            (work / name).mkdir(exist_ok=True)
        if (work / SECRETS_NAME).exists():
            os.chmod(work / SECRETS_NAME, 0o600)
        progress("checking the database", 0, 1)
        if kind == "sqlite":
            tables = _restore_sqlite(work / SQLITE_NAME)
        else:
            assert database_url is not None
            tables = _restore_pg(work / PG_NAME, database_url)
            (work / PG_NAME).unlink()
        if tables != manifest["tables"]:
            raise MaintenanceError(f"the restored database's rows per table {tables} differ from the "
                                   f"backup's {manifest['tables']}")
        progress("checking the database", 1, 1)
        _set_database_url(work / CONFIG_NAME, database_url)
        if directory.exists():
            directory.rmdir()
        os.replace(work, directory)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return RestoreReport(directory=directory, database=kind, tables=tables, files=len(manifest["files"]),
                         created_at=str(manifest.get("created_at", "")))


def _extract(tar: tarfile.TarFile, into: Path, progress: Progress = silent) -> None:
    """Unpack the regular files and folders of ``tar`` into ``into`` (member by member, each
    reported to ``progress`` as stage ``"unpacking"``); a member that is anything
    else (a link, a device) or whose path would leave ``into`` is refused. Python's ``data``
    extraction filter is applied too where it exists (3.11.4 and later)."""
    members = tar.getmembers()
    for member in members:
        path = Path(member.name)
        if not (member.isfile() or member.isdir()) or path.is_absolute() or ".." in path.parts:
            raise MaintenanceError(f"the archive holds {member.name!r}, which a benchbook backup never does")
    for done, member in enumerate(members):
        progress("unpacking", done, len(members))
        if hasattr(tarfile, "data_filter"):
            tar.extract(member, into, filter="data")
        else:  # pragma: no cover  (Python 3.11.0-3.11.3)
            tar.extract(member, into)
    progress("unpacking", len(members), len(members))


def _manifest(tar: tarfile.TarFile, archive: Path) -> dict[str, Any]:
    try:
        member = tar.extractfile(MANIFEST)
        manifest = json.load(member) if member is not None else None
    except (KeyError, ValueError, tarfile.TarError):
        manifest = None
    if (not isinstance(manifest, dict) or manifest.get("database") not in ("sqlite", "postgresql")
            or not isinstance(manifest.get("tables"), dict) or not isinstance(manifest.get("files"), list)):
        raise MaintenanceError(f"{archive} is not a benchbook backup (no valid {MANIFEST})")
    if int(manifest.get("format", 0)) > FORMAT:
        raise MaintenanceError(f"{archive} was written by a newer benchbook ({manifest.get('benchbook')}); "
                               "restore it with that version")
    return manifest


def _check_files(files_dir: Path, shas: list[str], progress: Progress = silent) -> None:
    """Every file of the manifest is there and hashes to its name (each reported to ``progress``
    as stage ``"checking files"``)."""
    bad = []
    for done, sha in enumerate(shas):
        progress("checking files", done, len(shas))
        try:
            with (files_dir / sha[:2] / sha).open("rb") as fh:
                if _sha256(fh) != sha:
                    bad.append(f"{sha} (damaged)")
        except FileNotFoundError:
            bad.append(f"{sha} (missing)")
    progress("checking files", len(shas), len(shas))
    if bad:
        raise MaintenanceError(f"{len(bad)} file(s) of the backup are missing or damaged: {', '.join(bad[:5])}")


def _restore_sqlite(path: Path) -> dict[str, int]:
    if not path.is_file():
        raise MaintenanceError(f"the backup holds no {SQLITE_NAME}")
    conn = sqlite3.connect(path)
    try:
        problems = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
    finally:
        conn.close()
    if problems != ["ok"]:
        raise MaintenanceError(f"the backup's database is not intact: {'; '.join(problems[:5])}")
    engine = create_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as conn_:
            return census(conn_)[1]
    finally:
        engine.dispose()


def _restore_pg(dump: Path, url: str) -> dict[str, int]:
    pg_restore = _tool("pg_restore")
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            taken = conn.scalar(text("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"))
        if taken:
            raise MaintenanceError(f"the database at {make_url(url).render_as_string(hide_password=True)} is not "
                                   f"empty ({taken} tables); restore into an empty database")
        _run_tool([pg_restore, "--no-owner", "--no-privileges", "--single-transaction", "--exit-on-error",
                   str(dump)], url, database_flag="--dbname")
        with engine.connect() as conn:
            return census(conn)[1]
    finally:
        engine.dispose()


def _set_database_url(config: Path, url: str | None) -> None:
    """Point the restored ``benchbook.toml`` at its database: ``url``, or (None) the folder's own
    ``benchbook.db``. Comments and everything else are kept (tomlkit)."""
    import tomlkit

    if not config.exists():
        config.write_text(tomlkit.dumps(tomlkit.document()), encoding="utf-8")
    doc = tomlkit.parse(config.read_text(encoding="utf-8"))
    database = doc.get("database")
    if url is None:
        if isinstance(database, dict) and "url" in database:
            del database["url"]
    else:
        if not isinstance(database, dict):
            database = tomlkit.table()
            doc["database"] = database
        database["url"] = url
    config.write_text(tomlkit.dumps(doc), encoding="utf-8")


# ----------------------------------------------------------------------- PostgreSQL tools
def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise MaintenanceError(f"{name} is not on PATH: install the PostgreSQL client tools (e.g. Debian's "
                               f"postgresql-client) of the server's major version, then try again")
    return found


def _run_tool(argv: list[str], url: str, database_flag: str = "--dbname") -> None:
    """Run a PostgreSQL client tool on the database at ``url`` (a SQLAlchemy URL; the password
    goes in ``PGPASSWORD``, never on the command line). Raises :class:`MaintenanceError` with
    its error output when it fails."""
    parsed = make_url(url)
    dsn = parsed.set(drivername="postgresql", password=None).render_as_string(hide_password=False)
    env = dict(os.environ)
    if parsed.password:
        env["PGPASSWORD"] = str(parsed.password)
    done = subprocess.run([*argv, f"{database_flag}={dsn}"], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise MaintenanceError(f"{Path(argv[0]).name} failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
