"""The API commands, generated from ``openapi.yaml`` with no per-operation code.

One click group per tag (``benchbook <tag> …``, ``_`` as ``-``; help = the tag's description) and one
command per operation (``benchbook <tag> <command>``):

- the command name is the function part of the ``operationId`` with ``_`` → ``-``, after
  dropping the words equal to the tag or its singular (``collections.list_deleted_collections``
  → ``list-deleted``); the full name is kept when nothing is left or two names would collide;
- path parameters are positional arguments, in path order;
- query parameters are options (arrays repeatable, booleans ``--x/--no-x``, enums choices);
- JSON body properties are options too (objects and arrays as JSON text, ``null`` for
  nullable ones), plus ``--body JSON|@file.json`` for the whole body (options override its keys);
- a multipart binary part ``file`` is ``--file PATH``;
- a JSON body's text property marked ``x-cli-file: NAME`` may also be read from a file,
  ``--NAME PATH`` (``-`` for stdin; ``workflows put NAME --file workflow.yaml``);
- operations whose success response is not JSON get ``--output FILE``;
- lists whose page may hold a lower bound for ``total`` (``total_exact``) get ``--count``, the
  exact number of matches (``limit=0``).

Only options the user gave are sent; the server applies the document's defaults.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from benchbook.cli.lazy import LazyGroup
from benchbook.cli.operation import NULL, Operation
from benchbook.cli.pages import counts_exactly
from benchbook.cli.sending import Settings, read_body_option, run_request
from benchbook.cli.spelling import cli_spelling
from benchbook.http import document as api_document

HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
RESERVED = {"body", "output", "help"}
CLI_NAMES = {"dataset": "collection", "dataset_name": "collection", "collection_name": "collection"}
"""Parameter names the CLI spells otherwise: the API's "dataset" is a collection everywhere
in the CLI (issue 14, item 13); JSON keys (``dataset_id``) keep the OpenAPI document's names."""


def load_document() -> dict[str, Any]:
    """The OpenAPI document shipped in the ``benchbook`` package (``openapi.yaml``), parsed
    (a fresh copy; cached per content, :mod:`benchbook.http.document`).

    Raises ``FileNotFoundError`` when the package has no document and ``yaml.YAMLError`` when it
    is not valid YAML.
    """
    return api_document.load_document()


def deref(doc: dict[str, Any], node: Any) -> Any:
    """``node`` with local ``$ref`` chains (``#/components/…``) followed; other nodes unchanged.

    Raises ``KeyError`` for a reference to a missing component.
    """
    seen = 0
    while isinstance(node, dict) and "$ref" in node and seen < 50:
        target: Any = doc
        for part in str(node["$ref"]).lstrip("#/").split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node, seen = target, seen + 1
    return node


def command_names(operation_ids: list[str], tag: str) -> dict[str, str]:
    """Command names for one tag's ``operationIds`` (``{operationId: name}``), as described above.

    ``command_names(["records.delete_record", "records.delete_records"], "records")`` →
    ``{"records.delete_record": "delete-record", "records.delete_records": "delete-records"}``.
    """
    drop = {tag, tag.removesuffix("s")}
    full = {op: op.split(".", 1)[-1].replace("_", "-") for op in operation_ids}
    names: dict[str, str] = {}
    for op in operation_ids:
        words = [w for w in op.split(".", 1)[-1].split("_") if w not in drop]
        names[op] = "-".join(words) or full[op]
    while True:
        counts: dict[str, int] = {}
        for name in names.values():
            counts[name] = counts.get(name, 0) + 1
        clashing = [op for op, name in names.items() if counts[name] > 1 and name != full[op]]
        if not clashing:
            return names
        for op in clashing:
            names[op] = full[op]


# ---------------------------------------------------------------------------------------- types


class JsonText(click.ParamType):  # type: ignore[type-arg]  # generic since click 8.5
    """JSON text on the command line, checked to be an object or array (``kind``)."""

    def __init__(self, kind: str, nullable: bool) -> None:
        self.kind, self.nullable = kind, nullable
        self.name = f"json {kind}"

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "JSON"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as exc:
            hint = "; a string needs JSON quotes, e.g. '\"text\"'" if self.kind == "value" else ""
            self.fail(f"not valid JSON ({exc.msg} at position {exc.pos}): {value!r}{hint}", param, ctx)
        if parsed is None and (self.nullable or self.kind == "value"):
            return NULL
        wanted = {"object": dict, "array": list}.get(self.kind)
        if wanted is not None and not isinstance(parsed, wanted):
            self.fail(f"expected a JSON {self.kind}, got {json.dumps(parsed)[:60]}", param, ctx)
        return parsed


class Nullable(click.ParamType):  # type: ignore[type-arg]
    """Wraps a scalar type so the literal text ``null`` gives :data:`NULL` (JSON null)."""

    def __init__(self, inner: click.ParamType[Any]) -> None:
        self.inner = inner
        self.name = f"{inner.name} or null"

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str | None:
        if isinstance(self.inner, click.Choice):
            return "[" + "|".join(map(str, self.inner.choices)) + "|null]"
        return self.inner.name.upper()

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value == "null" or value is NULL:
            return NULL
        return self.inner.convert(value, param, ctx)



def _scalar_type(schema: dict[str, Any]) -> click.ParamType[Any]:
    if "enum" in schema:
        return click.Choice([str(v) for v in schema["enum"] if v is not None])
    types: dict[str, click.ParamType[Any]] = {"integer": click.INT, "number": click.FLOAT, "boolean": click.BOOL}
    return types.get(str(schema.get("type")), click.STRING)


def _help_text(text: str | None) -> str:
    """One-line option help from a (possibly multi-line) description."""
    return " ".join(str(text or "").split())


def _command_help(summary: str, description: str) -> str:
    """Summary + description; paragraphs holding list items are kept unwrapped (click ``\\b``)."""
    paragraphs = [summary.strip()] if summary else []
    for para in re.split(r"\n\s*\n", description.strip()):
        if not para.strip() or para.strip() == summary.strip():
            continue
        if re.search(r"^\s*[-*] ", para, re.MULTILINE):
            para = "\b\n" + para
        paragraphs.append(para)
    return "\n\n".join(paragraphs)


def _default_note(schema: dict[str, Any]) -> str:
    if "default" not in schema:
        return ""
    value = schema["default"]
    return f"  [default: {value if isinstance(value, str) else json.dumps(value)}]"


def _flag_name(name: str, taken: set[str], prefix: str) -> str:
    base = CLI_NAMES.get(name, name).replace("_", "-")
    flag = base if base not in taken and base not in RESERVED else f"{prefix}-{base}"
    taken.add(flag)
    return flag


def _query_option(doc: dict[str, Any], param: dict[str, Any], dest: str, flag: str) -> click.Option:
    schema = deref(doc, param.get("schema") or {})
    help_text = _help_text(param.get("description")) + _default_note(schema)
    kind = schema.get("type")
    if kind == "array":
        items = deref(doc, schema.get("items") or {})
        return click.Option([f"--{flag}", dest], multiple=True, type=_scalar_type(items),
                            required=bool(param.get("required")), help=help_text + "  (repeatable)")
    if kind == "boolean" and "enum" not in schema:
        return click.Option([f"--{flag}/--no-{flag}", dest], default=None,
                            required=bool(param.get("required")), help=help_text)
    return click.Option([f"--{flag}", dest], type=_scalar_type(schema), default=None,
                        required=bool(param.get("required")), help=help_text)


def _body_option(doc: dict[str, Any], prop: str, schema: dict[str, Any], dest: str, flag: str,
                 required: bool) -> click.Option:
    schema = deref(doc, schema)
    nullable = bool(schema.get("nullable"))
    help_text = _help_text(schema.get("description")) + _default_note(schema)
    if required:
        help_text += "  (required, here or in --body)"
    kind = schema.get("type")
    if kind in ("object", "array") or (kind is None and "enum" not in schema):
        text = help_text + f"  (JSON {kind or 'value'}{', or null' if nullable else ''})"
        return click.Option([f"--{flag}", dest], type=JsonText(str(kind or "value"), nullable),
                            default=None, help=text.strip())
    if kind == "boolean":  # a nullable one too: null means "leave as is", which omitting says
        return click.Option([f"--{flag}/--no-{flag}", dest], default=None, help=help_text)
    ptype: click.ParamType[Any] = _scalar_type(schema)
    if nullable:
        ptype = Nullable(ptype)
        help_text += "  (null to send null)"
    return click.Option([f"--{flag}", dest], type=ptype, default=None, help=help_text.strip())


@dataclasses.dataclass(frozen=True)
class TextFrom:
    """A body property read from a text file (``x-cli-file``): the file option's dest and flag,
    and the property option's dest and flag."""

    file_dest: str
    file_flag: str
    dest: str
    flag: str

    def read_into(self, values: dict[str, Any]) -> None:
        """Put the file's text (when the file option was given) in ``values[dest]``.

        Raises ``click.UsageError`` when both options are given, ``click.BadParameter`` for a
        file that cannot be read or is not UTF-8 text.
        """
        path = values.pop(self.file_dest, None)
        if path is None:
            return
        if values.get(self.dest) is not None:
            raise click.UsageError(f"give {self.flag} or {self.file_flag}, not both")
        try:
            values[self.dest] = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise click.BadParameter(f"cannot read {path}: {reason}", param_hint=self.file_flag) from exc


class ApiCommand(click.Command):
    """A generated command; ``operation`` says how its parameters become the request."""

    def __init__(self, operation: Operation, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.operation = operation


def build_command(doc: dict[str, Any], path: str, method: str, op: dict[str, Any], name: str) -> ApiCommand:
    """The click command for one operation (``op`` is the operation object at ``path``/``method``):
    an argument per path parameter, an option per query parameter and body property, and the
    output options (``--table``, ``--count``, ``--output``) the response allows.

    Raises ``KeyError`` for dangling ``$ref``s.
    """
    built = _Builder(doc, op, Operation(str(op["operationId"]), method, path))
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for raw in [*(doc["paths"][path].get("parameters") or []), *(op.get("parameters") or [])]:
        p = deref(doc, raw)
        merged[(p["name"], p["in"])] = p
    built.path_arguments(path, merged)
    built.query_options(merged)
    built.body_options()
    built.output_options()
    spec = built.spec
    for param in built.params:
        if isinstance(param, click.Option) and param.help:
            param.help = cli_spelling(param.help, spec.cli_names_by_http())
    summary = str(op.get("summary") or "").strip()
    help_text = cli_spelling(_command_help(summary, str(op.get("description") or "")), spec.cli_names_by_http())
    if built.arg_help:
        help_text += "\n\n\b\nArguments:\n" + "\n".join(built.arg_help)
    return ApiCommand(spec, name, callback=built.callback(), params=built.params, help=help_text,
                      short_help=summary.rstrip(".") or None)


class _Builder:
    """The parts of one operation's command as :func:`build_command` gathers them: the click
    parameters, the flag names taken, the help lines of the arguments, the options read from
    files, and ``spec``, which maps them back to the request."""

    def __init__(self, doc: dict[str, Any], op: dict[str, Any], spec: Operation) -> None:
        self.doc, self.op, self.spec = doc, op, spec
        self.params: list[click.Parameter] = []
        self.taken: set[str] = set()
        self.arg_help: list[str] = []
        self.from_files: list[TextFrom] = []
        self.limit_dest: str | None = None

    def path_arguments(self, path: str, merged: dict[tuple[str, str], dict[str, Any]]) -> None:
        """One required argument per ``{name}`` of the path, in order."""
        for i, pname in enumerate(re.findall(r"{([^}]+)}", path)):
            metavar = CLI_NAMES.get(pname, pname).upper()
            self.spec.path_params.append((f"path_{i}", pname))
            self.spec.cli_names[f"path.{pname}"] = metavar
            self.params.append(click.Argument([f"path_{i}"], metavar=metavar, required=True))
            description = _help_text((merged.get((pname, "path")) or {}).get("description"))
            self.arg_help.append(f"  {metavar}  {description}".rstrip())

    def query_options(self, merged: dict[tuple[str, str], dict[str, Any]]) -> None:
        """One option per query parameter."""
        for i, ((pname, where), p) in enumerate(merged.items()):
            if where != "query":
                continue
            dest = f"query_{i}"
            schema = deref(self.doc, p.get("schema") or {})
            self.spec.query.append((dest, pname, schema.get("type") == "array"))
            flag = _flag_name(pname, self.taken, "query")
            self.spec.cli_names[f"query.{pname}"] = f"--{flag}"
            self.params.append(_query_option(self.doc, p, dest, flag))

    def body_options(self) -> None:
        """One option per property of a JSON or multipart body (a file path for a binary part),
        ``--<x-cli-file>`` beside a property the document says may come from a file, and
        ``--body`` for the whole JSON body."""
        content = (deref(self.doc, self.op.get("requestBody") or {}).get("content") or {})
        json_media = next((m for m in content if m == "application/json" or m.endswith("+json")), None)
        if not json_media and "multipart/form-data" not in content:
            return
        schema = deref(self.doc, (content.get(json_media or "multipart/form-data") or {}).get("schema") or {})
        required = set(schema.get("required") or [])
        self.spec.json_body, self.spec.multipart = bool(json_media), not json_media
        for i, (prop, pschema) in enumerate((schema.get("properties") or {}).items()):
            pschema = deref(self.doc, pschema)
            dest = f"body_{i}"
            flag = _flag_name(prop, self.taken, "body")
            self.spec.cli_names[f"body.{prop}"] = f"--{flag}"
            if self.spec.multipart and pschema.get("format") == "binary":
                self.spec.files.append((dest, prop))
                self.params.append(click.Option([f"--{flag}", dest], type=click.Path(exists=True, dir_okay=False),
                                                required=prop in required,
                                                help=_help_text(pschema.get("description")) or "File to send."))
                continue
            self.spec.body.append((dest, prop))
            self.params.append(_body_option(self.doc, prop, pschema, dest, flag, prop in required))
            if json_media and pschema.get("x-cli-file"):
                self._from_file(str(pschema["x-cli-file"]), dest, flag)
        if json_media:
            self.params.append(click.Option(["--body", "body_json"], metavar="JSON|@FILE", default=None,
                                            help="The whole JSON body (an object), or @file.json / @- for stdin; "
                                                 "the options above override its keys."))

    def _from_file(self, name: str, dest: str, flag: str) -> None:
        """``--<name> PATH`` reading the option just made (``--<flag>``) from a UTF-8 text file."""
        option = self.params[-1]
        option.help = (getattr(option, "help", None) or "").replace("here or in --body",
                                                                     f"here, in --{name} or in --body")
        file_flag = _flag_name(name, self.taken, "body")
        self.from_files.append(TextFrom(f"{dest}_file", f"--{file_flag}", dest, f"--{flag}"))
        self.params.append(click.Option([f"--{file_flag}", f"{dest}_file"], metavar="PATH", default=None,
                                        type=click.Path(dir_okay=False, allow_dash=True),
                                        help=f"Read --{flag} from this UTF-8 text file (- for stdin)."))

    def output_options(self) -> None:
        """``--table`` and ``--columns`` for a JSON answer, ``--count`` for a page whose total
        may be a lower bound, ``--output`` for an answer that is not JSON."""
        spec = self.spec
        spec.raw_output = _raw_output(self.doc, self.op)
        if not spec.raw_output and "table" not in self.taken:
            self.params.append(click.Option(["--table", "as_table"], is_flag=True, default=False,
                                            help="Show the JSON response as a table (same as the global --table)."))
            spec.columns_flag = "--table-columns" if "columns" in self.taken else "--columns"  # records list's own
            self.params.append(click.Option([spec.columns_flag, "table_columns"], metavar="NAMES", default=None,
                                            help="Columns of the table, comma-separated (implies --table); "
                                                 "without it the table says which columns it left out."))
        self.limit_dest = next((dest for dest, name, _ in spec.query if name == "limit"), None)
        if self.limit_dest and "count" not in self.taken and counts_exactly(_success_schema(self.doc, self.op)):
            self.params.append(click.Option(["--count", "count_only"], is_flag=True, default=False,
                                            help="Print only the exact number of matches (as --limit 0): a page's "
                                                 "total is a lower bound when counting took too long."))
        if spec.raw_output:
            self.params.append(click.Option(["--output", "-o", "output_file"], type=click.Path(dir_okay=False),
                                            default=None, help="Write the response body to this file instead of "
                                                               "stdout."))

    def callback(self) -> Callable[..., None]:
        """The command's callback: the values read (files, ``--body``, ``--count``), the output
        settings, then the request."""
        spec, from_files, limit_dest = self.spec, self.from_files, self.limit_dest

        def callback(**values: Any) -> None:
            ctx = click.get_current_context()
            values["body_json"] = read_body_option(values.get("body_json"))
            for source in from_files:
                source.read_into(values)
            if values.pop("count_only", False) and limit_dest:
                values[limit_dest] = 0
            settings = ctx.find_object(Settings) or Settings()
            if values.pop("as_table", False):
                settings = dataclasses.replace(settings, table=True)
            columns = values.pop("table_columns", None)
            if columns:
                settings = dataclasses.replace(settings, table=True, columns=columns)
            settings = dataclasses.replace(settings, columns_flag=spec.columns_flag)
            run_request(settings, spec.request(values), output_file=values.get("output_file"), operation=spec)
        return callback


def _success_schema(doc: dict[str, Any], op: dict[str, Any]) -> dict[str, Any]:
    """The JSON schema of the operation's first 2xx response (dereferenced), or ``{}``."""
    for status, response in (op.get("responses") or {}).items():
        if str(status).startswith("2"):
            media = (deref(doc, response).get("content") or {}).get("application/json") or {}
            found: dict[str, Any] = deref(doc, media.get("schema") or {})
            return found
    return {}


def _raw_output(doc: dict[str, Any], op: dict[str, Any]) -> bool:
    """True when the operation's success response has a body that is not JSON (CSV, file bytes)."""
    for status, response in (op.get("responses") or {}).items():
        if str(status).startswith("2"):
            media = list(deref(doc, response).get("content") or {})
            if media and not any(m == "application/json" or m.endswith("+json") for m in media):
                return True
    return False


def build_groups(doc: dict[str, Any] | None = None) -> list[LazyGroup]:
    """One click group per tag holding one command per operation, from ``doc`` (default: the
    packaged document). Groups are in the document's tag order; operations without tags go to
    a group named after the ``operationId`` prefix. A command is built when first looked up
    (:mod:`benchbook.cli.lazy`); listing a group builds none."""
    doc = doc if doc is not None else load_document()
    descriptions = {t["name"]: str(t.get("description") or "").strip() for t in doc.get("tags") or []}
    by_tag: dict[str, list[tuple[str, str, dict[str, Any]]]] = {name: [] for name in descriptions}
    for path, item in (doc.get("paths") or {}).items():
        for method, op in item.items():
            if method not in HTTP_METHODS or not isinstance(op, dict) or "operationId" not in op:
                continue
            tag = (op.get("tags") or [str(op["operationId"]).split(".", 1)[0]])[0]
            by_tag.setdefault(tag, []).append((path, method, op))
    groups = []
    for tag, ops in by_tag.items():
        if not ops:
            continue
        names = command_names([str(op["operationId"]) for _, _, op in ops], tag)
        group = LazyGroup(tag.replace("_", "-"), help=descriptions.get(tag) or None)  # file_access -> file-access
        for path, method, op in ops:
            name = names[str(op["operationId"])]
            summary = str(op.get("summary") or "").strip().rstrip(".")
            group.add_lazy(name, functools.partial(build_command, doc, path, method, op, name), summary)
        groups.append(group)
    return groups
