"""``benchbook.attach-files``: the files of a zip archive attached to the records they name.

Input ``archive``: a stored zip file. Config: ``schema`` (the records to attach to),
``key_field`` (one of its own fields), ``target_field`` (a ``file`` or ``file_list`` field of
it), ``collection`` (default the run's record's), ``pattern`` (a regular expression with one
group, searched in each member's file name — anchor it with ``^…$`` to match all of it — whose
group is the key; default: the file name without its last extension, so ``S-014.jpg`` → ``S-014``),
``max_members`` (default 10,000, at most 100,000) and ``max_total_bytes`` (default 2 GiB, at
most 16 GiB).

For each member, the records of ``schema`` in the collection whose ``key_field`` equals the key
(``find_records``, filter ``{field, op: eq, value}``: compared as the field's type, text case-
sensitively) decide what happens:

- exactly one record: the member is stored (``store_file``, under its file name without folders)
  and set on the record: a ``file`` field is replaced, a ``file_list`` field gets it appended;
  each record is updated once (``update_record``), so a record's files land in one change;
- no record (or a key the field's type cannot hold): ``unmatched``; two or more records:
  ``ambiguous`` (they are left alone); several members for one record with a ``file`` target:
  ``duplicates`` (the record is left alone, as no member is the obvious one); a name the
  pattern does not match: ``no_key``; a member that cannot be read (encrypted, damaged,
  a symbolic link): ``unreadable``; a file the record's field refuses (e.g. an ``accept`` or
  ``max_size`` restriction): ``refused``. Each counts as one problem.

Safety: directories and metadata entries (``__MACOSX/``, names starting with ``.``) are skipped;
member paths are never used as paths (only their last part, as the stored file's name), so
``../`` names do nothing; the archive is refused (kind ``invalid_input``) when it has more than
``max_members`` entries or declares more than ``max_total_bytes`` uncompressed, and reading
stops the same way if members inflate beyond what they declared. Members are read streaming
into the scratch folder, only those to be attached.

Outputs: ``attached`` (members set on a record), ``problems`` (members not attached),
``report`` (each kind above → up to 100 names; ``unreadable`` and ``refused`` entries are
``{name, problem}``).
"""
from __future__ import annotations

import os
import re
import stat
import tempfile
import zipfile
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from benchbook.plugin import BINARY_INLINE_THRESHOLD, Context, Plugin, PluginError, PluginRpcError
from benchbook.runner.plugin_host.builtins._stored import fetch, short

GIB = 1024 ** 3
DEFAULT_MAX_MEMBERS = 10_000
MAX_MEMBERS = 100_000
DEFAULT_MAX_TOTAL_BYTES = 2 * GIB
MAX_TOTAL_BYTES = 16 * GIB
REPORT_LIMIT = 100
"""Names listed per kind of problem in ``report`` (all are counted)."""
CHUNK = 1024 * 1024
KINDS = ("unmatched", "ambiguous", "duplicates", "no_key", "unreadable", "refused")

plugin = Plugin(
    id="benchbook.attach-files", name="Attach files from a zip", category="files",
    description="Stores each file of a zip archive and sets it on the one record of the configured schema whose "
                "key field equals the key taken from the file's name (default: the name without extension, e.g. "
                "S-014.jpg → S-014). Files matching no record or several, and unreadable ones, are counted in "
                "'problems' and listed in 'report'. Guards against zip bombs (entry count, total size).",
    inputs={"archive": {"type": "file", "required": True, "description": "the stored .zip archive"}},
    outputs={"attached": {"type": "integer", "required": True, "description": "files set on a record"},
             "problems": {"type": "integer", "required": True, "description": "files not attached"},
             "report": {"type": "json", "required": True,
                        "description": "unmatched, ambiguous, duplicates, no_key: file names; unreadable, refused: "
                                       "{name, problem}; up to 100 each"}},
    config_schema={
        "type": "object",
        "properties": {
            "schema": {"type": "string", "minLength": 1, "description": "the schema of the records to attach to"},
            "key_field": {"type": "string", "minLength": 1,
                          "description": "the field holding each record's key (matched exactly)"},
            "target_field": {"type": "string", "minLength": 1,
                             "description": "the file or file_list field that receives the file"},
            "collection": {"type": "string", "minLength": 1,
                           "description": "where the records are (default: the run's record's collection)"},
            "pattern": {"type": "string", "minLength": 1,
                        "description": "a regular expression with one group: the key in the file name "
                                       "(default: the name without extension)"},
            "max_members": {"type": "integer", "minimum": 1, "maximum": MAX_MEMBERS,
                            "default": DEFAULT_MAX_MEMBERS, "description": "most entries the archive may have"},
            "max_total_bytes": {"type": "integer", "minimum": 1, "maximum": MAX_TOTAL_BYTES,
                                "default": DEFAULT_MAX_TOTAL_BYTES,
                                "description": "most bytes its files may hold uncompressed"},
        },
        "required": ["schema", "key_field", "target_field"],
        "additionalProperties": False,
    },
    capabilities=["get_context_record", "get_schema", "get_file", "find_records", "store_file", "update_record"],
)


@dataclass
class Report:
    """The problems by kind: counted, the first ``REPORT_LIMIT`` of each kept."""

    count: int = 0
    kinds: dict[str, list[Any]] = field(default_factory=lambda: {kind: [] for kind in KINDS})

    def add(self, kind: str, name: str, problem: str | None = None) -> None:
        self.count += 1
        if len(self.kinds[kind]) < REPORT_LIMIT:
            self.kinds[kind].append(name if problem is None else {"name": name, "problem": short(problem)})


def _checked_fields(schema: dict[str, Any], key_field: str, target_field: str) -> str:
    """The target field's type; ``invalid_config`` unless both fields fit."""
    fields = {f["name"]: f for f in schema["fields"] if not f.get("deleted_at")}
    names = ", ".join(fields) or "none"
    if key_field not in fields:
        raise PluginError("invalid_config", f"key_field: schema {schema['name']!r} has no field {key_field!r} "
                                            f"(fields: {names})")
    target = fields.get(target_field)
    if target is None:
        raise PluginError("invalid_config", f"target_field: schema {schema['name']!r} has no field "
                                            f"{target_field!r} (fields: {names})")
    if target["type"] not in ("file", "file_list"):
        raise PluginError("invalid_config", f"target_field: {target_field!r} is a {target['type']} field, not a "
                                            "file or file_list field")
    return str(target["type"])


def _pattern(text: str | None) -> re.Pattern[str] | None:
    if text is None:
        return None
    try:
        compiled = re.compile(text)
    except re.error as exc:
        raise PluginError("invalid_config", f"pattern {text!r} is not a regular expression: {exc}") from None
    if compiled.groups != 1:
        raise PluginError("invalid_config", f"pattern {text!r} must have exactly one group (the key), not "
                                            f"{compiled.groups}")
    return compiled


def _key(name: str, pattern: re.Pattern[str] | None) -> str | None:
    if pattern is None:
        return PurePosixPath(name).stem or None
    found = pattern.search(name)
    return found.group(1) if found and found.group(1) else None


def _members(archive: zipfile.ZipFile, config: dict[str, Any], report: Report) -> list[tuple[zipfile.ZipInfo, str]]:
    """The file entries worth matching, with their file names; refuses oversized archives."""
    infos = archive.infolist()
    if len(infos) > config["max_members"]:
        raise PluginError("invalid_input", f"the archive has {len(infos):,} entries, more than max_members "
                                           f"({config['max_members']:,})")
    declared = sum(info.file_size for info in infos if not info.is_dir())
    if declared > config["max_total_bytes"]:
        raise PluginError("invalid_input", f"the archive's files hold {declared:,} bytes uncompressed, more than "
                                           f"max_total_bytes ({config['max_total_bytes']:,})")
    out = []
    for info in infos:
        parts = PurePosixPath(info.filename.replace("\\", "/")).parts
        if info.is_dir() or not parts or "__MACOSX" in parts or parts[-1].startswith("."):
            continue
        name = "".join(c if c.isprintable() else "_" for c in parts[-1])
        if stat.S_ISLNK(info.external_attr >> 16):
            report.add("unreadable", name, "a symbolic link, not a file")
            continue
        out.append((info, name))
    return out


class _Budget:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.left = limit

    def spend(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise PluginError("invalid_input", f"the archive inflates beyond max_total_bytes ({self.limit:,}); "
                                               "stopped reading it")


def _store(ctx: Context, archive: zipfile.ZipFile, info: zipfile.ZipInfo, name: str, budget: _Budget) -> str:
    """Stream member ``info`` into the scratch folder, store it as ``name``; its sha256."""
    ctx.scratch.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=ctx.scratch, prefix="member-", suffix=".bin")
    try:
        size = 0
        with os.fdopen(fd, "wb") as out, archive.open(info) as source:
            while chunk := source.read(CHUNK):
                budget.spend(len(chunk))
                size += len(chunk)
                out.write(chunk)
        if size <= BINARY_INLINE_THRESHOLD:
            stored = ctx.store_file(name, Path(tmp).read_bytes())
        else:
            stored = ctx.call_tool("store_file", filename=name,
                                   content={"encoding": "path", "path": str(Path(tmp).resolve())})
        return str(stored["sha256"])
    finally:
        Path(tmp).unlink(missing_ok=True)


@plugin.run
def run(ctx: Context, inputs: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    schema = ctx.get_schema(config["schema"])
    key_field, target_field = config["key_field"], config["target_field"]
    target_type = _checked_fields(schema, key_field, target_field)
    pattern = _pattern(config.get("pattern"))
    collection = config.get("collection") or ctx.get_context_record()["collection"]
    stored = fetch(ctx, inputs["archive"])
    report = Report()
    with stored.open() as stream:
        try:
            archive = zipfile.ZipFile(stream)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError) as exc:
            raise PluginError("invalid_input", f"{stored.filename} is not a readable zip archive: {exc}") from None
        with archive:
            members = _members(archive, config, report)
            found: dict[str, tuple[int, dict[str, Any] | None]] = {}
            plan: dict[str, list[tuple[zipfile.ZipInfo, str]]] = defaultdict(list)
            records: dict[str, dict[str, Any]] = {}
            for info, name in members:
                key = _key(name, pattern)
                if key is None:
                    report.add("no_key", name)
                    continue
                if key not in found:
                    found[key] = _lookup(ctx, collection, schema["name"], key_field, key)
                total, match = found[key]
                if total > 1:
                    report.add("ambiguous", name)
                elif match is None:
                    report.add("unmatched", name)
                else:
                    records[match["id"]] = match
                    plan[match["id"]].append((info, name))
            budget = _Budget(config["max_total_bytes"])
            attached = 0
            for record_id, entries in plan.items():
                if target_type == "file" and len(entries) > 1:
                    for _, name in entries:
                        report.add("duplicates", name)
                    continue
                attached += _attach(ctx, archive, records[record_id], entries, target_field, target_type, budget,
                                    report)
    ctx.log(f"{stored.filename}: {attached} file(s) attached, {report.count} problem(s)")
    return {"attached": attached, "problems": report.count, "report": report.kinds}


def _lookup(ctx: Context, collection: str, schema: str, key_field: str, key: str) -> tuple[int, dict[str, Any] | None]:
    """How many records have ``key`` in ``key_field`` (0 when the field's type cannot hold
    ``key``), and the first of them."""
    try:
        page = ctx.find_records(collection=collection, schema=schema,
                                filter={"field": key_field, "op": "eq", "value": key}, limit=2)
    except PluginRpcError as exc:
        if exc.kind == "invalid":
            return 0, None
        raise
    items: list[dict[str, Any]] = page["items"]
    return int(page["total"]), items[0] if items else None


def _attach(ctx: Context, archive: zipfile.ZipFile, record: dict[str, Any], entries: list[tuple[zipfile.ZipInfo, str]],
            target_field: str, target_type: str, budget: _Budget, report: Report) -> int:
    """Store ``entries`` and set them on ``record`` in one update; how many were attached."""
    shas: list[str] = []
    names: list[str] = []
    for info, name in entries:
        try:
            shas.append(_store(ctx, archive, info, name, budget))
            names.append(name)
        except (zipfile.BadZipFile, zlib.error, RuntimeError, NotImplementedError, EOFError) as exc:
            report.add("unreadable", name, f"{type(exc).__name__}: {exc}")
    if not shas:
        return 0
    if target_type == "file":
        value: Any = shas[0]
    else:
        current = (record.get("data") or {}).get(target_field) or []
        value = list(dict.fromkeys([*current, *shas]))
    try:
        ctx.update_record(record["id"], {target_field: value})
    except PluginRpcError as exc:
        if exc.kind != "invalid":
            raise
        for name in names:
            report.add("refused", name, exc.message)
        return 0
    return len(shas)
