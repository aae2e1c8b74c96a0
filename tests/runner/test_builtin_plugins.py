"""The built-ins benchbook.set-fields, benchbook.import-table and benchbook.attach-files, end to
end: files uploaded through POST /files, the plugin run by :class:`StepRunner` from the registry
with :class:`HostOperations` in one workflow history batch (as tests/runner/test_steps.py does),
every RPC call recorded and checked against the plugin's declared capabilities."""
from __future__ import annotations

import hashlib
import io
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pytest

from benchbook.domain import plugin_registry as registry
from benchbook.domain.context import Ctx
from benchbook.domain.history import entries
from benchbook.runner.errors import StepFailed
from benchbook.runner.plugin_host.builtins import PLUGINS
from benchbook.runner.plugin_host.builtins.import_table import cell_value
from benchbook.runner.plugin_host.rpc import HostOperations, enforcing
from benchbook.runner.plugin_host.steps import StepRunner
from tests.api.helpers import make_collection, make_record, make_schema
from tests.runner.automation_helpers import kept, register_plugins

NEW = ("benchbook.set-fields", "benchbook.import-table", "benchbook.attach-files")


@dataclass
class Ran:
    outputs: dict[str, Any]
    logs: list[tuple[str, str]]
    batch_id: str
    used: list[str]
    """The RPC method or tool of every call the plugin made, in order."""


def run_step(api: Any, plugin_id: str, inputs: dict[str, Any], config: dict[str, Any],
             record_id: str | None = None) -> Ran:
    """One step in a workflow batch; the host answers only the plugin's declared capabilities
    (built-ins are not gated at run time, so the test gates them) and records every call."""
    db = api.app.services.db
    logs: list[tuple[str, str]] = []
    used: list[str] = []
    with StepRunner() as runner, db.session() as s, s.begin():
        plugin = registry.runnable(s, plugin_id)
        ctx = Ctx(session=s, actor="workflow:test", files_dir=api.project.files_dir)
        batch = entries.open_batch(ctx, "workflow", "test run")
        ctx.batch_id = batch.id

        def rpc_for(scratch: Path) -> Callable[[dict[str, Any]], dict[str, Any]]:
            gated = enforcing(plugin["capabilities"], HostOperations(ctx, record_id=record_id, scratch=scratch))

            def recorded(call: dict[str, Any]) -> dict[str, Any]:
                used.append(call["params"]["tool"] if call["method"] == "call_tool" else call["method"])
                answer: dict[str, Any] = gated(call)
                assert answer["type"] == "rpc_result" or answer["error"]["kind"] != "capability_denied", answer
                return answer
            return recorded

        outputs = runner.run_step(plugin, inputs, config, log=lambda st, m: logs.append((st, m)), rpc_for=rpc_for)
        return Ran(outputs, logs, batch.id, used)


def failure(api: Any, plugin_id: str, inputs: dict[str, Any], config: dict[str, Any],
            record_id: str | None = None) -> StepFailed:
    with pytest.raises(StepFailed) as caught:
        run_step(api, plugin_id, inputs, config, record_id)
    return caught.value


def parts(api: Any, batch_id: str) -> list[tuple[str, int]]:
    return [(p["action"], p["count"]) for p in api.ok("GET", f"/audit/batches/{batch_id}")["parts"]]


def upload(api: Any, name: str, content: bytes) -> str:
    sha: str = api.ok("POST", "/files", 201, files={"file": (name, content)})["sha256"]
    return sha


def children(api: Any, record_id: str) -> list[dict[str, Any]]:
    page = api.ok("GET", "/collections/lab/records", params={"parent_record_id": record_id, "limit": 1000})
    return sorted(page["items"], key=lambda r: r["created_at"])


def zipped(members: dict[str, bytes], *, directories: tuple[str, ...] = ()) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for folder in directories:
            archive.writestr(zipfile.ZipInfo(folder), b"")
        for name, content in members.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def make_lab(api: Any) -> dict[str, Any]:
    """Collection ``lab``: ``sample`` records (top level) with ``measurement`` children, whose
    ``name`` is a uniqueness key among siblings; ``{"sample": S-001}``."""
    make_schema(api, "sample", [
        {"name": "code", "type": "string"}, {"name": "site", "type": "string"},
        {"name": "taken_on", "type": "date"}, {"name": "taken_at", "type": "datetime"},
        {"name": "depth_m", "type": "float"}, {"name": "count", "type": "integer"},
        {"name": "tags", "type": "tags"}, {"name": "label", "type": "string"}, {"name": "notes", "type": "string"},
        {"name": "sheet", "type": "file"}, {"name": "photo", "type": "file"}, {"name": "photos", "type": "file_list"},
        {"name": "scan", "type": "file", "restrictions": {"accept": [".jpg"]}},
    ])
    make_schema(api, "measurement", [
        {"name": "name", "type": "string", "required": True}, {"name": "value", "type": "float"},
        {"name": "taken_on", "type": "date"}, {"name": "ok", "type": "boolean"},
        {"name": "n", "type": "integer"}, {"name": "at", "type": "datetime"},
    ], parent="sample")
    api.ok("PUT", "/schemas/measurement/unique-keys", json={"keys": [["name"]]})
    make_collection(api, "lab", ["sample", "measurement"], timezone="UTC")
    sample = make_record(api, "lab", "sample", {
        "code": "S-001", "site": "North", "taken_on": "2024-05-03", "taken_at": "2024-05-03T09:30:00+00:00",
        "depth_m": 2.345, "count": 7, "tags": ["lake", "winter"]})
    register_plugins(api)
    return {"sample": sample}


@pytest.fixture
def lab(api: Any) -> dict[str, Any]:
    """:func:`make_lab` for a test that writes."""
    return make_lab(api)


def _make_untouched(api: Any) -> dict[str, Any]:
    lab_ = make_lab(api)
    return {"lab": lab_, "samples": make_samples(api, lab_)}


def _records_now(api: Any) -> Any:
    r = api.get("/collections/lab/records", params={"limit": 1000})
    return r.status_code, r.json()


@pytest.fixture
def untouched(backend_app: Any) -> tuple[Any, dict[str, Any], dict[str, dict[str, Any]]]:
    """The app, :func:`make_lab`'s lab and :func:`make_samples`' samples for tests whose step
    fails and must write nothing: built once per backend, and again when the lab's records are
    not what the build left (every other test empties the tables first; a step that wrote
    anyway changes them too)."""
    built = kept(backend_app, "test_builtin_plugins.lab", _make_untouched, _records_now)
    return backend_app, built["lab"], built["samples"]


# ------------------------------------------------------------------------------ registration
def test_the_new_built_ins_are_registered_with_their_contracts(api: Any) -> None:
    listed = {p["id"]: p for p in api.ok("GET", "/plugins")}
    for plugin in PLUGINS:
        got = listed[plugin.id]
        assert (got["tier"], got["builtin"], got["status"], got["source"]) == ("builtin", True, "ok", "builtin")
        assert got["capabilities"] == plugin.capabilities
    assert listed["benchbook.set-fields"]["capabilities"] == ["get_context_record", "update_record"]
    assert listed["benchbook.import-table"]["capabilities"] == [
        "get_context_record", "get_schema", "get_file", "create_record"]
    assert listed["benchbook.attach-files"]["capabilities"] == [
        "get_context_record", "get_schema", "get_file", "find_records", "store_file", "update_record"]
    for plugin_id in ("benchbook.import-table", "benchbook.attach-files"):
        assert listed[plugin_id]["outputs"]["problems"]["type"] == "integer"
    assert all(listed[i]["description"] and listed[i]["config_schema"]["properties"] for i in NEW)


# ------------------------------------------------------------------------------ set-fields
def test_set_fields_renders_templates_over_the_record_and_inputs_in_one_update(api: Any, lab: dict[str, Any]) -> None:
    rec = lab["sample"]
    ran = run_step(api, "benchbook.set-fields", {"a": "run 4", "b": 12}, {"fields": {
        "label": "{site}-{taken_on:%Y%m%d}-{depth_m:.1f} m ({inputs.a})",
        "notes": "{{braces}} {count:03d} {tags} at {taken_at:%H:%M} {code!r:>9}",
        "count": "{inputs.b}",            # a lone placeholder keeps the value's type
        "depth_m": 1.5,                   # a literal
        "code": None,                     # null clears the field
    }}, record_id=rec["id"])
    changed = {"label": "North-20240503-2.3 m (run 4)", "notes": "{braces} 007 lake, winter at 09:30   'S-001'",
               "count": 12, "depth_m": 1.5, "code": None}
    assert ran.outputs == {"changed": changed}
    data = api.ok("GET", f"/records/{rec['id']}")["data"]
    assert {key: data.get(key) for key in changed} == changed
    assert ran.used == ["get_context_record", "update_record"]
    assert parts(api, ran.batch_id) == [("update", 1)]
    assert [e["action"] for e in api.ok("GET", f"/audit/batches/{ran.batch_id}/entries")["items"]] == ["update"]


@pytest.mark.parametrize(("template", "inputs", "kind", "words"), [
    ("{site} {colour}", {}, "invalid_input", "placeholder {colour} has no value"),
    ("{inputs.c}", {"a": 1}, "invalid_input", "placeholder {inputs.c} has no value"),
    ("{site:.2f}", {}, "invalid_config", "cannot format {site}"),
    ("{site", {}, "invalid_config", "fields.label: template '{site'"),
    ("{} and {0}", {}, "invalid_config", "placeholder without a name"),
    ("{inputs.z}", {}, "invalid_config", "there is no input 'z' for {inputs.z} (inputs: a, b, c, d, e)"),
])
def test_set_fields_fails_on_a_bad_template_and_writes_nothing(
        untouched: Any, template: str, inputs: dict[str, Any], kind: str, words: str) -> None:
    api, lab, _ = untouched
    rec = lab["sample"]
    failed = failure(api, "benchbook.set-fields", inputs, {"fields": {"label": template, "count": 1}},
                     record_id=rec["id"])
    assert failed.kind == kind and words in failed.message
    assert api.ok("GET", f"/records/{rec['id']}")["data"]["count"] == 7


def test_set_fields_refused_values_fail_the_step_with_the_domains_reason(untouched: Any) -> None:
    api, lab, _ = untouched
    failed = failure(api, "benchbook.set-fields", {}, {"fields": {"count": "{site}"}}, record_id=lab["sample"]["id"])
    assert failed.kind == "invalid" and "count" in failed.message


# ------------------------------------------------------------------------------ import-table
MEASUREMENTS_CSV = (
    "Name,VALUE, taken_on ,ok,colour\n"
    "m1,1.5,2024-05-01,yes,red\n"          # row 2
    "m2,not a number,2024-05-02,no,\n"     # row 3: refused by the host (value)
    "m3, 2.25 ,,true,\n"                   # row 4: cells are trimmed
    ",,,,\n"                               # row 5: blank, skipped without a word
    "m1,9,,,\n"                            # row 6: repeats row 2's uniqueness key
    "m4,3,2024-13-01,,\n"                  # row 7: refused (no such date)
    "m5,4,,,,oops\n"                       # row 8: more cells than the header
    "m6,5,,0,\n"                           # row 9
)


def names_and_data(api: Any, record_id: str) -> list[tuple[str, dict[str, Any]]]:
    return sorted(((r["schema_name"], r["data"]) for r in children(api, record_id)), key=lambda p: p[1]["name"])


def import_csv(api: Any, lab: dict[str, Any]) -> tuple[Ran, str]:
    rec = lab["sample"]
    sha = upload(api, "measurements.csv", MEASUREMENTS_CSV.encode())
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"sheet": sha}})
    return run_step(api, "benchbook.import-table", {"file": sha}, {"schema": "measurement"}, record_id=rec["id"]), sha


def test_import_table_creates_a_child_per_row_and_counts_bad_rows_and_columns(api: Any, lab: dict[str, Any]) -> None:
    rec = lab["sample"]
    ran, _ = import_csv(api, lab)
    assert (ran.outputs["created"], ran.outputs["problems"]) == (3, 5)
    report = ran.outputs["report"]
    assert [(p["row"], p.get("column")) for p in report] == [(1, "colour"), (3, None), (6, None), (7, None),
                                                             (8, None)]
    assert "'colour' matches no field of schema 'measurement'" in report[0]["problem"]
    assert "value" in report[1]["problem"] and "not a number" in report[1]["problem"]
    assert "repeats row 2's values for the uniqueness key (name)" in report[2]["problem"]
    assert "taken_on" in report[3]["problem"] and "more cells" in report[4]["problem"]
    assert names_and_data(api, rec["id"]) == [
        ("measurement", {"name": "m1", "value": 1.5, "taken_on": "2024-05-01", "ok": True}),
        ("measurement", {"name": "m3", "value": 2.25, "ok": True}),
        ("measurement", {"name": "m6", "value": 5.0, "ok": False}),
    ]
    assert ran.used == ["get_context_record", "get_schema", "get_file"] + ["create_record"] * 5
    assert parts(api, ran.batch_id) == [("create", 3)]
    assert ("log", "measurements.csv: 3 measurement record(s) created, 5 problem(s)") in ran.logs


def test_import_table_fails_whole_on_a_clash_with_an_existing_record_and_writes_nothing(
        api: Any, lab: dict[str, Any]) -> None:
    _, sha = import_csv(api, lab)
    failed = failure(api, "benchbook.import-table", {"file": sha}, {"schema": "measurement"},
                     record_id=lab["sample"]["id"])
    assert failed.kind == "conflict" and failed.message.startswith("row 2: ")
    assert len(children(api, lab["sample"]["id"])) == 3


def test_import_table_keeps_only_the_first_20_problems_in_the_report(api: Any, lab: dict[str, Any]) -> None:
    text = "name,value\n" + "".join(f"r{i},bad\n" for i in range(30)) + "ok,1\n"
    sha = upload(api, "many.csv", text.encode())
    ran = run_step(api, "benchbook.import-table", {"file": sha}, {"schema": "measurement"},
                   record_id=lab["sample"]["id"])
    assert (ran.outputs["created"], ran.outputs["problems"]) == (1, 30)
    assert [p["row"] for p in ran.outputs["report"]] == list(range(2, 22))


@pytest.mark.parametrize(("name", "text", "config"), [
    ("m.tsv", "name\tvalue\tn\nt1\t1.5\t2\n", {}),
    ("m.txt", "name\tvalue\tn\nt1\t1.5\t2\n", {}),
    ("m.csv", "name;value;n\nt1;1.5;2\n", {}),
    ("m.csv", "name|value|n\n\"t1\"|1.5|2\n", {}),
    ("m.csv", "\ufeffname,value,n\r\nt1,1.5,2\r\n", {}),
    ("m.csv", "name:value:n\nt1:1.5:2\n", {"delimiter": ":"}),
    ("m.dat", "name\tvalue\tn\nt1\t1.5\t2\n", {"delimiter": "tab"}),
])
def test_import_table_sniffs_or_takes_the_delimiter(api: Any, lab: dict[str, Any], name: str, text: str,
                                                    config: dict[str, Any]) -> None:
    sha = upload(api, name, text.encode())
    ran = run_step(api, "benchbook.import-table", {"file": sha}, {"schema": "measurement", **config},
                   record_id=lab["sample"]["id"])
    assert (ran.outputs["created"], ran.outputs["problems"]) == (1, 0), ran.outputs["report"]
    assert names_and_data(api, lab["sample"]["id"]) == [("measurement", {"name": "t1", "value": 1.5, "n": 2})]


def test_import_table_reads_windows_1252_text(api: Any, lab: dict[str, Any]) -> None:
    sha = upload(api, "m.csv", "name,value\nMüller,1\n".encode("cp1252"))
    run_step(api, "benchbook.import-table", {"file": sha}, {"schema": "measurement"}, record_id=lab["sample"]["id"])
    assert [d["name"] for _, d in names_and_data(api, lab["sample"]["id"])] == ["Müller"]


def workbook() -> bytes:
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    book.active.title = "Notes"
    book.active.append(["not", "this", "sheet"])
    sheet = book.create_sheet("Data")
    sheet.append(["NAME", "Value", "taken_on", "ok", "n", "at", "remark"])
    sheet.append(["x1", 1, datetime(2024, 5, 1), True, 3.0, datetime(2024, 5, 1, 10, 30), "fine"])
    sheet.append(["x2", 2.5, date(2024, 5, 2), False, 4, "2024-05-02T08:00:00+02:00", None])
    sheet.append([None, None, None, None, None, None, None])
    sheet.append(["x3", "abc", None, None, 2.5, None, None])     # row 5: value and n refused
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


@pytest.mark.parametrize("selected", ["Data", 2])
def test_import_table_reads_a_sheet_of_an_xlsx_workbook_typed_by_the_fields(
        api: Any, lab: dict[str, Any], selected: str | int) -> None:
    sha = upload(api, "results.xlsx", workbook())
    ran = run_step(api, "benchbook.import-table", {"file": sha}, {"schema": "measurement", "sheet": selected},
                   record_id=lab["sample"]["id"])
    assert (ran.outputs["created"], ran.outputs["problems"]) == (2, 2)
    report = ran.outputs["report"]
    assert [(p["row"], p.get("column")) for p in report] == [(1, "remark"), (5, None)]
    assert "value" in report[1]["problem"] and "n:" in report[1]["problem"]
    assert names_and_data(api, lab["sample"]["id"]) == [
        ("measurement", {"name": "x1", "value": 1.0, "taken_on": "2024-05-01", "ok": True, "n": 3,
                         "at": "2024-05-01T10:30:00+00:00"}),
        ("measurement", {"name": "x2", "value": 2.5, "taken_on": "2024-05-02", "ok": False, "n": 4,
                         "at": "2024-05-02T06:00:00+00:00"}),
    ]
    assert parts(api, ran.batch_id) == [("create", 2)]


def test_import_table_numbers_rows_as_the_sheet_does(api: Any, lab: dict[str, Any]) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    sheet = book.active
    sheet["B3"], sheet["C3"], sheet["D3"] = "name", "value", "unit"   # a header below two blank rows, from B
    sheet["B4"], sheet["C4"], sheet["D4"] = "y1", "heavy", "kg"
    sheet["B5"], sheet["C5"] = "y2", 2
    buffer = io.BytesIO()
    book.save(buffer)
    sha = upload(api, "offset.xlsx", buffer.getvalue())
    ran = run_step(api, "benchbook.import-table", {"file": sha}, {"schema": "measurement"},
                   record_id=lab["sample"]["id"])
    assert (ran.outputs["created"], [(p["row"], p.get("column")) for p in ran.outputs["report"]]) == (
        1, [(3, "unit"), (4, None)])
    assert names_and_data(api, lab["sample"]["id"]) == [("measurement", {"name": "y2", "value": 2.0})]


@pytest.mark.parametrize(("name", "content", "config", "kind", "words"), [
    ("a.csv", b"colour,size\nred,1\n", {"schema": "measurement"}, "invalid_input",
     "no column of a.csv matches a field of schema 'measurement'"),
    ("a.csv", b"", {"schema": "measurement"}, "invalid_input", "holds no rows"),
    ("a.csv", b"name\nx\n", {"schema": "sample"}, "invalid_config", "is not a child schema of 'sample'"),
    ("a.csv", b"name\nx\n", {"schema": "nope"}, "not_found", "nope"),
    ("a.xls", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 100, {"schema": "measurement"}, "invalid_input",
     "only .xlsx workbooks"),
    ("a.xlsx", b"PK\x03\x04 not really", {"schema": "measurement"}, "invalid_input", "not a readable .xlsx"),
    ("a.csv", b"name\nx\n", {"schema": "measurement", "collection": "elsewhere"}, "not_found", "elsewhere"),
    ("a.csv", b"name\nx\ny\n\nz\n", {"schema": "measurement", "max_rows": 2}, "invalid_input",
     "a.csv has 3 rows after its header, more than max_rows (2)"),
    ("a.csv", b"name\n" + b"x\n" * 50, {"schema": "measurement", "max_bytes": 100}, "invalid_input",
     "a.csv is 105 bytes, more than max_bytes (100)"),
])
def test_import_table_refuses_what_it_cannot_import(untouched: Any, name: str, content: bytes,
                                                     config: dict[str, Any], kind: str, words: str) -> None:
    api, lab, _ = untouched
    sha = upload(api, name, content)
    failed = failure(api, "benchbook.import-table", {"file": sha}, config, record_id=lab["sample"]["id"])
    assert failed.kind == kind and words in failed.message
    assert children(api, lab["sample"]["id"]) == []


def test_import_table_names_the_sheets_when_the_chosen_one_is_missing(untouched: Any) -> None:
    api, lab, _ = untouched
    sha = upload(api, "results.xlsx", workbook())
    for sheet, words in (("Summary", "has no sheet 'Summary' (sheets: Notes, Data)"), (3, "has 2 sheet(s)")):
        failed = failure(api, "benchbook.import-table", {"file": sha}, {"schema": "measurement", "sheet": sheet},
                         record_id=lab["sample"]["id"])
        assert failed.kind == "invalid_config" and words in failed.message


@pytest.mark.parametrize(("value", "field_type", "sent"), [
    (" a ", "string", "a"), ("", "string", None), (float("nan"), "float", None), (None, "integer", None),
    (3.0, "integer", 3), (3.5, "integer", 3.5), (3.0, "string", "3"), (2.5, "string", "2.5"), (True, "string", "true"),
    (True, "boolean", True), (1, "boolean", 1), (datetime(2024, 5, 1, 0, 0), "string", "2024-05-01"),
    (datetime(2024, 5, 1, 7, 0), "date", "2024-05-01"), (datetime(2024, 5, 1), "datetime", "2024-05-01T00:00:00"),
    (date(2024, 5, 1), "date", "2024-05-01"),
])
def test_workbook_cells_are_sent_typed_for_their_field(value: Any, field_type: str, sent: Any) -> None:
    assert cell_value(value, field_type) == sent


# ------------------------------------------------------------------------------ attach-files
def make_samples(api: Any, lab: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """S-001 (the lab's, count 7), S-002, S-003 twice (an ambiguous key), S-004."""
    made = {"S-001": lab["sample"]}
    for code, count in (("S-002", 1), ("S-003", 2), ("S-004", 3)):
        made[code] = make_record(api, "lab", "sample", {"code": code, "count": count})
    make_record(api, "lab", "sample", {"code": "S-003"})
    return made


@pytest.fixture
def samples(api: Any, lab: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """:func:`make_samples` for a test that writes."""
    return make_samples(api, lab)


def sha256(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def attach(api: Any, samples: dict[str, dict[str, Any]], members: dict[str, bytes], config: dict[str, Any],
           **kwargs: Any) -> Ran:
    sha = upload(api, "photos.zip", zipped(members, **kwargs))
    return run_step(api, "benchbook.attach-files", {"archive": sha},
                    {"schema": "sample", "key_field": "code", "target_field": "photo", **config},
                    record_id=samples["S-001"]["id"])


def test_attach_files_sets_each_member_on_the_one_record_its_name_keys(
        api: Any, samples: dict[str, dict[str, Any]]) -> None:
    ran = attach(api, samples, {
        "photos/S-001.jpg": b"one", "S-002.jpg": b"two", "S-003.jpg": b"three", "S-999.jpg": b"nobody's",
        "../../S-004.jpg": b"four",                      # a path trick: only the name counts
        "__MACOSX/photos/._S-001.jpg": b"junk", ".DS_Store": b"junk",
    }, {}, directories=("photos/",))
    assert ran.outputs["attached"] == 3 and ran.outputs["problems"] == 2
    assert ran.outputs["report"] == {"unmatched": ["S-999.jpg"], "ambiguous": ["S-003.jpg"], "duplicates": [],
                                     "no_key": [], "unreadable": [], "refused": []}
    for code, content in (("S-001", b"one"), ("S-002", b"two"), ("S-004", b"four")):
        photo = api.ok("GET", f"/records/{samples[code]['id']}")["data"]["photo"]
        assert photo == sha256(content)
        assert api.ok("GET", f"/files/{photo}/info")["filename"] == f"{code}.jpg"
    assert "photo" not in api.ok("GET", f"/records/{samples['S-003']['id']}")["data"]
    assert parts(api, ran.batch_id) == [("update", 3)]
    assert ran.used[:3] == ["get_schema", "get_context_record", "get_file"]
    assert sorted(ran.used[3:]) == ["find_records"] * 5 + ["store_file"] * 3 + ["update_record"] * 3
    assert ("log", "photos.zip: 3 file(s) attached, 2 problem(s)") in ran.logs


def test_attach_files_appends_to_a_file_list_with_a_key_pattern_and_streams_large_members(
        api: Any, samples: dict[str, dict[str, Any]]) -> None:
    old = upload(api, "old.png", b"old")
    api.ok("PATCH", f"/records/{samples['S-001']['id']}", json={"data": {"photos": [old]}})
    large = bytes(range(256)) * 6000  # 1.5 MB: stored through a scratch file
    ran = attach(api, samples, {"S-001_a.png": b"a", "S-001_b.png": large, "S-002_x.png": b"x", "README.txt": b"?"},
                 {"target_field": "photos", "pattern": r"^(S-\d+)_", "collection": "lab"})
    assert (ran.outputs["attached"], ran.outputs["problems"]) == (3, 1)
    assert ran.outputs["report"]["no_key"] == ["README.txt"]
    assert api.ok("GET", f"/records/{samples['S-001']['id']}")["data"]["photos"] == [old, sha256(b"a"),
                                                                                      sha256(large)]
    assert api.ok("GET", f"/records/{samples['S-002']['id']}")["data"]["photos"] == [sha256(b"x")]
    assert api.ok("GET", f"/files/{sha256(large)}/info")["size"] == len(large)
    assert parts(api, ran.batch_id) == [("update", 2)]
    assert "get_context_record" not in ran.used  # the collection was given


def test_attach_files_leaves_a_record_alone_when_several_members_name_it_for_one_file(
        api: Any, samples: dict[str, dict[str, Any]]) -> None:
    ran = attach(api, samples, {"S-001.jpg": b"1", "old/S-001.jpeg": b"2", "S-002.jpg": b"two"}, {})
    assert (ran.outputs["attached"], ran.outputs["problems"]) == (1, 2)
    assert ran.outputs["report"]["duplicates"] == ["S-001.jpg", "S-001.jpeg"]
    assert "photo" not in api.ok("GET", f"/records/{samples['S-001']['id']}")["data"]
    assert ran.used.count("store_file") == 1


def test_attach_files_counts_files_the_field_refuses_and_keys_of_another_type(
        api: Any, samples: dict[str, dict[str, Any]]) -> None:
    ran = attach(api, samples, {"S-001.png": b"png", "S-002.jpg": b"jpg"}, {"target_field": "scan"})
    assert (ran.outputs["attached"], ran.outputs["problems"]) == (1, 1)
    refused = ran.outputs["report"]["refused"]
    assert [r["name"] for r in refused] == ["S-001.png"] and ".jpg" in refused[0]["problem"]
    assert parts(api, ran.batch_id) == [("update", 1)]
    by_count = attach(api, samples, {"7.jpg": b"seven", "abc.jpg": b"?"}, {"key_field": "count"})
    assert (by_count.outputs["attached"], by_count.outputs["report"]["unmatched"]) == (1, ["abc.jpg"])
    assert api.ok("GET", f"/records/{samples['S-001']['id']}")["data"]["photo"] == sha256(b"seven")


def test_attach_files_reports_members_it_cannot_read(api: Any, samples: dict[str, dict[str, Any]]) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        link = zipfile.ZipInfo("S-002.jpg")
        link.external_attr = (0o120777 << 16)
        archive.writestr(link, "/etc/passwd")
        archive.writestr("S-001.jpg", b"fine")
    damaged = bytearray(buffer.getvalue())
    damaged[damaged.index(b"fine")] ^= 0xFF  # a bad CRC
    sha = upload(api, "photos.zip", bytes(damaged))
    ran = run_step(api, "benchbook.attach-files", {"archive": sha},
                   {"schema": "sample", "key_field": "code", "target_field": "photo"}, record_id=samples["S-001"]["id"])
    assert (ran.outputs["attached"], ran.outputs["problems"]) == (0, 2)
    unreadable = ran.outputs["report"]["unreadable"]
    assert [u["name"] for u in unreadable] == ["S-002.jpg", "S-001.jpg"]
    assert "symbolic link" in unreadable[0]["problem"] and "CRC" in unreadable[1]["problem"]
    assert parts(api, ran.batch_id) == []


@pytest.mark.parametrize(("archive", "config", "kind", "words"), [
    (zipped({"a.jpg": b"1", "b.jpg": b"2", "c.jpg": b"3"}), {"max_members": 2}, "invalid_input",
     "3 entries, more than max_members (2)"),
    (zipped({"S-001.jpg": b"\0" * 20_000_000}), {"max_total_bytes": 10_000_000}, "invalid_input",
     "20,000,000 bytes uncompressed, more than max_total_bytes (10,000,000)"),
    (zipped({"a.jpg": b"1"}), {"max_total_bytes": 17 * 1024 ** 3}, "invalid_config", "is greater than the maximum"),
    (zipped({"a.jpg": b"1"}), {"max_members": 100_001}, "invalid_config", "is greater than the maximum"),
    (b"not a zip at all", {}, "invalid_input", "not a readable zip archive"),
    (zipped({"a.jpg": b"1"}), {"pattern": r"S-\d+"}, "invalid_config", "exactly one group"),
    (zipped({"a.jpg": b"1"}), {"pattern": r"(S-"}, "invalid_config", "not a regular expression"),
    (zipped({"a.jpg": b"1"}), {"target_field": "code"}, "invalid_config", "'code' is a string field"),
    (zipped({"a.jpg": b"1"}), {"key_field": "nope"}, "invalid_config", "has no field 'nope'"),
    (zipped({"a.jpg": b"1"}), {"schema": "nope"}, "not_found", "nope"),
])
def test_attach_files_refuses_oversized_archives_and_bad_config_before_writing(
        untouched: Any, archive: bytes, config: dict[str, Any], kind: str, words: str) -> None:
    api, _, samples = untouched
    sha = upload(api, "photos.zip", archive)
    failed = failure(api, "benchbook.attach-files", {"archive": sha},
                     {"schema": "sample", "key_field": "code", "target_field": "photo", **config},
                     record_id=samples["S-001"]["id"])
    assert failed.kind == kind and words in failed.message
    assert "photo" not in api.ok("GET", f"/records/{samples['S-001']['id']}")["data"]


# ------------------------------------------------------------------------------ capabilities
@pytest.mark.usefixtures("samples")
@pytest.mark.parametrize("plugin_id", NEW)
def test_each_new_built_in_declares_exactly_the_rpc_calls_it_makes(api: Any, lab: dict[str, Any],
                                                                    plugin_id: str) -> None:
    """Run with only the declared capabilities answered (a denial fails the test); then every
    declared capability was used."""
    rec = lab["sample"]
    if plugin_id == "benchbook.set-fields":
        ran = run_step(api, plugin_id, {"a": 1}, {"fields": {"label": "{code}/{inputs.a}"}}, record_id=rec["id"])
    elif plugin_id == "benchbook.import-table":
        ran, _ = import_csv(api, lab)
    else:
        sha = upload(api, "photos.zip", zipped({"S-001.jpg": b"one"}))
        ran = run_step(api, plugin_id, {"archive": sha},
                       {"schema": "sample", "key_field": "code", "target_field": "photo"}, record_id=rec["id"])
    declared = next(p for p in PLUGINS if p.id == plugin_id).capabilities
    assert set(ran.used) == set(declared), (ran.used, declared)
