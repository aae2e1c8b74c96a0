"""Imported files made to take the server down (issue 33 findings 1, 2 and 4): tiny files that
expand into rows × columns of memory or hours of blank rows, and damaged workbooks. Each is a
422 naming the file or the ``[limits]`` setting, through ``POST /collections/{name}/import``
(the real app) and ``benchbook import``; nothing here depends on time."""
from __future__ import annotations

import io
import json
import threading
import tracemalloc
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from starlette.testclient import TestClient

from benchbook.domain import abandon
from benchbook.domain.context import Ctx
from benchbook.domain.errors import Abandoned, Invalid
from benchbook.domain.imports.readers import cell_at, read_table
from benchbook.domain.imports.run import ImportOptions, import_table
from benchbook.domain.imports.workbook import UNPACK_FLOOR
from benchbook.http.app import create_app
from benchbook.persistence.db import open_database
from benchbook.settings.config import Project
from benchbook.settings.limits import Limits, use
from tests.api.helpers import make_collection, make_schema
from tests.conftest import Api
from tests.import_helpers import cli, collection, records, schema, shown

SHEET = "xl/worksheets/sheet1.xml"
MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"


# ------------------------------------------------------------------------------ helpers

def upload(api: Any, name: str, content: bytes, **form: str) -> Any:
    return api.post("/collections/c/import", files={"file": (name, content)}, data={"schema": "s", **form})


def detail(response: Any) -> str:
    assert response.status_code == 422, response.text[:500]
    body = response.json()
    assert isinstance(body["detail"], str) and "errors" not in body
    return body["detail"]


def setup_api(api: Any) -> None:
    make_schema(api, "s", [{"name": "title", "type": "string"}, {"name": "n", "type": "integer"}])
    make_collection(api, "c", ["s"])


@contextmanager
def limited(tmp_project: Project, table: dict[str, int]) -> Iterator[Api]:
    """The real app (SQLite) with the ``[limits]`` ``table``, its schema and collection made."""
    configured = Project(root=tmp_project.root, settings={**tmp_project.settings, "limits": table})
    app = create_app(configured)
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
        api = Api(client, configured, app)
        setup_api(api)
        yield api
    app.services.db.engine.dispose()


@pytest.fixture
def project(tmp_project: Project) -> Project:
    schema(tmp_project, "s", [{"name": "title", "type": "string"}, {"name": "n", "type": "integer"}])
    collection(tmp_project, "c", ["s"])
    return tmp_project


def workbook(parts: dict[str, bytes | str] | None = None, drop: tuple[str, ...] = ()) -> bytes:
    """A workbook openpyxl writes (one sheet, header ``title``), then some of its parts replaced
    or dropped, byte for byte, with zipfile."""
    book = openpyxl.Workbook()
    book.active.append(["title"])
    book.active.append(["a"])
    out = io.BytesIO()
    book.save(out)
    source = zipfile.ZipFile(io.BytesIO(out.getvalue()))
    replaced = {name: content.encode() if isinstance(content, str) else content
                for name, content in (parts or {}).items()}
    result = io.BytesIO()
    with zipfile.ZipFile(result, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            if info.filename not in drop:
                target.writestr(info.filename, replaced.pop(info.filename, None) or source.read(info.filename))
        for name, content in replaced.items():
            target.writestr(name, content)
    return result.getvalue()


def sheet(rows: str, dimension: str) -> str:
    """Sheet XML declaring ``dimension`` and holding ``rows`` (``<row>`` elements)."""
    return (f'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{MAIN}"><dimension ref="{dimension}"/>'
            f"<sheetData>{rows}</sheetData></worksheet>")


def text_cell(ref: str, text: str) -> str:
    return f'<c r="{ref}" t="inlineStr"><is><t>{text}</t></is></c>'


def dtd(root: str, entities: str) -> str:
    return f'<?xml version="1.0"?><!DOCTYPE {root} [{entities}]>'


def tall_sheet(last: int) -> bytes:
    """The probe's file: a dimension of ``A1:XFD{last}``, a header in A1 and one cell in row
    ``last``; every row between is blank and absent."""
    rows = f'<row r="1">{text_cell("A1", "title")}</row><row r="{last}">{text_cell(f"A{last}", "x")}</row>'
    return workbook({SHEET: sheet(rows, f"A1:XFD{last}")})


LAUGHS = '<!ENTITY lol0 "lol">' + "".join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10))
"""The billion laughs: ``&lol9;`` is 10⁹ times "lol" (expat refuses it past 8 MB, with a ParseError)."""


# ------------------------------------------------------------------ finding 1: columns and cells

def test_the_probes_json_of_20000_own_keys_is_refused_at_the_key_past_the_columns_limit(api: Any) -> None:
    setup_api(api)
    content = json.dumps([{f"k{i}": 1} for i in range(20000)]).encode()
    assert 280_000 < len(content) < 300_000  # the probe's 289 KB file; it took the server to 3.4 GB
    text = detail(upload(api, "w.json", content, dry_run="true"))
    assert text.startswith("w.json has more than 1,000 distinct keys") and "[limits] import_columns" in text


@pytest.mark.parametrize(("name", "content", "rows", "past"), [
    # the key past the limit comes before the broken rest: the file is refused there, unread
    ("w.json", "[" + ", ".join(json.dumps({f"k{i}": 1}) for i in range(1001)) + ', {"a": }]', 10_000,
     "not valid JSON"),
    ("w.ndjson", "".join(json.dumps({f"k{i}": 1}) + "\n" for i in range(1001)) + '{"a": }\n', 10_000,
     "not valid JSON"),
    # the header is refused before its rows are counted (two, past import_rows = 1)
    ("w.csv", ",".join(f"c{i}" for i in range(1001)) + "\n1\n2\n", 1, "more than 1 rows"),
])
def test_columns_past_the_limit_are_refused_before_the_rows_are_read(api: Any, name: str, content: str, rows: int,
                                                                     past: str) -> None:
    setup_api(api)
    text = detail(upload(api, name, content.encode(), dry_run="true"))
    assert text.startswith(f"{name} has more than 1,000 ") and "[limits] import_columns in benchbook.toml" in text
    with use(Limits(import_rows=rows)), pytest.raises(Invalid, match="import_columns"):
        read_table(content.encode(), name)
    with use(Limits(import_rows=rows, import_columns=1001, import_cells_per_byte=1000)), \
            pytest.raises(Invalid, match=past):
        read_table(content.encode(), name)  # one more column allowed: the reading goes on to the rows


def test_the_probes_csv_of_100000_columns_is_refused_by_the_command_too(project: Project, tmp_path: Path) -> None:
    wide = tmp_path / "wide.csv"
    wide.write_text(",".join(f"c{i}" for i in range(100_000)) + "\n" + "1\n" * 10)
    assert len(wide.read_bytes()) > 680_000  # the probe's 690 KB file peaked at 789 MB
    out = cli(project, "import", str(wide), "-c", "c", "-s", "s", "--dry-run")
    assert out.exit_code == 1 and "wide.csv has more than 1,000 columns" in out.output
    assert "[limits] import_columns" in out.output and "Traceback" not in out.output


def test_a_file_may_span_a_bounded_number_of_cells_per_byte(api: Any) -> None:
    """1,000 columns (within the limit) and 1,100 rows of one cell: 7 KB spanning 1.1 million
    cells, past the floor of 1,000,000 and 16 per byte."""
    setup_api(api)
    content = (",".join(f"c{i}" for i in range(1000)) + "\n" + "1\n" * 1100).encode()
    text = detail(upload(api, "sparse.csv", content, dry_run="true"))
    assert text.startswith("sparse.csv spans more than 1,000,000 cells") and "[limits] import_cells_per_byte" in text
    fewer = (",".join(f"c{i}" for i in range(1000)) + "\n" + "1\n" * 900).encode()
    body = upload(api, "sparse.csv", fewer, dry_run="true").json()
    assert body["created"] == 900 and body["dry_run"] is True


def test_a_sparse_json_file_is_held_sparse() -> None:
    """2,000 objects of one key each, every key its own (the limits raised so that the file is
    read): the rows hold the cells the file has, not 2,000 × 2,000; the peak of what reading it
    allocates stays within a few dozen times the file's size (padded rows took 1,200 times)."""
    content = json.dumps([{f"k{i}": i} for i in range(2000)]).encode()
    with use(Limits(import_columns=2000, import_cells_per_byte=1000)):
        tracemalloc.start()
        try:
            table = read_table(content, "w.json")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert len(table.columns) == 2000 and len(table.rows) == 2000
    assert sum(len(cells) for _, cells in table.rows) == 2000
    assert cell_at(table.rows[5][1], 5) == 5 and cell_at(table.rows[5][1], 6) is None
    assert peak < 64 * len(content), (peak, len(content))


def test_a_sparse_json_file_imports_within_raised_limits(tmp_project: Project) -> None:
    content = json.dumps([{"title": "first", "n": 1}] + [{f"k{i}": i} for i in range(1500)]).encode()
    with limited(tmp_project, {"import_columns": 2000, "import_cells_per_byte": 1000}) as api:
        body = upload(api, "w.json", content).json()
        assert body["created"] == 1501 and "columns that name no field" in body["notes"][0]
        assert api.ok("GET", "/collections/c")["record_count"] == 1501


# ----------------------------------------------------------- finding 2: a workbook's blank rows

def test_the_probes_workbook_of_a_million_blank_rows_is_refused(tmp_project: Project) -> None:
    """A few KB declaring ``A1:XFD1048576``, a header in A1 and one cell in row 1,048,576: its
    blank rows count as cells (past the 1,000,000 a small file may span) and as rows, and no row
    is padded to the declared width. (On SQLite only: the refusal comes while the file is read,
    before the database is asked anything, and reading a million rows takes seconds.)"""
    content = tall_sheet(1_048_576)
    assert len(content) < 8000
    with limited(tmp_project, {}) as api:
        text = detail(upload(api, "tall.xlsx", content, dry_run="true"))
    assert text.startswith("tall.xlsx spans more than 1,000,000 cells") and "import_cells_per_byte" in text
    with use(Limits(import_cells_per_byte=1000)), pytest.raises(Invalid, match="more than 1,000,000 rows.*blank rows"):
        read_table(content, "tall.xlsx")


def test_a_workbooks_blank_rows_count_against_the_row_limit(tmp_project: Project) -> None:
    with limited(tmp_project, {"import_rows": 100}) as api:
        text = detail(upload(api, "tall.xlsx", tall_sheet(2000), dry_run="true"))
        assert text.startswith("tall.xlsx has more than 100 rows") and "[limits] import_rows" in text
        assert upload(api, "short.xlsx", tall_sheet(101), dry_run="true").json()["created"] == 1


def test_the_declared_dimension_is_not_trusted(project: Project, tmp_path: Path) -> None:
    """A sheet declaring ``A1:A2`` but holding two columns and three rows is read whole (read-only
    openpyxl would cut every row at the declared width and stop at the declared last row)."""
    rows = f'<row r="1">{text_cell("A1", "title")}{text_cell("B1", "n")}</row>' + "".join(
        f'<row r="{r}">{text_cell(f"A{r}", t)}<c r="B{r}"><v>{n}</v></c></row>' for r, t, n in ((2, "a", 1), (3, "b", 2)))
    path = tmp_path / "small.xlsx"
    path.write_bytes(workbook({SHEET: sheet(rows, "A1:A2")}))
    table = read_table(path.read_bytes(), path.name)
    assert table.columns == ["title", "n"] and table.rows == [(2, ["a", 1]), (3, ["b", 2])]
    out = cli(project, "import", str(path), "-c", "c", "-s", "s")
    assert out.exit_code == 0, out.output
    assert shown(project, "c", "s") == [{"title": "a", "n": 1}, {"title": "b", "n": 2}]


def test_reading_stops_when_the_requester_has_gone() -> None:
    """The edge sets the request's event when its client leaves; the reading loops check it."""
    gone = threading.Event()
    gone.set()
    content = "title\n" + "x\n" * 10
    with use(Limits(import_rows=10_000_000)), abandon.watching(gone):
        for name, data in (("tall.xlsx", tall_sheet(5000)), ("rows.csv", content.encode()),
                           ("rows.json", json.dumps([{"title": "x"}] * 10).encode())):
            with pytest.raises(Abandoned):
                read_table(data, name)
    assert len(read_table(tall_sheet(5000), "tall.xlsx").rows) == 1  # not watched: read to the end


def test_checking_stops_when_the_requester_has_gone(project: Project) -> None:
    """An import whose requester goes after its first 500 rows are checked stops before the next
    500 and writes nothing."""
    table = read_table(("title,n\n" + "".join(f"t{i},{i}\n" for i in range(1200))).encode(), "rows.csv")
    gone = threading.Event()

    class Leaves:
        checked = 0

        def phase(self, name: str, total: int) -> None:
            pass

        def advance(self, n: int) -> None:
            self.checked += n
            gone.set()

    progress = Leaves()
    db = open_database(project.database_url)
    try:
        with db.session() as session, session.begin(), abandon.watching(gone):
            ctx = Ctx(session=session, actor="test", files_dir=project.files_dir)
            with pytest.raises(Abandoned):
                import_table(ctx, table, ImportOptions(collection="c", schema="s"), progress)
    finally:
        db.engine.dispose()
    assert progress.checked == 500 and records(project) == []


# ------------------------------------------------------------------ finding 4: damaged workbooks

def _bare(xml: str) -> str:
    return xml.split("?>", 1)[1]


DAMAGED = {
    "content_types": ({"[Content_Types].xml": "<x"}, (), "not well-formed XML"),
    "entity_bomb": ({"xl/workbook.xml": dtd("workbook", LAUGHS) + f'<workbook xmlns="{MAIN}">&lol9;</workbook>'}, (),
                    "declares XML entities"),
    "entity_in_the_sheet": ({SHEET: dtd("worksheet", LAUGHS) + _bare(sheet(
        f'<row r="1">{text_cell("A1", "&lol9;")}</row>', "A1"))}, (), "declares XML entities"),
    "missing_part": ({}, ("xl/workbook.xml",), "cannot be read as an Excel workbook"),
    "bad_number": ({SHEET: sheet(f'<row r="1">{text_cell("A1", "title")}</row><row r="2"><c r="A2"><v>1x</v></c>'
                                 "</row>", "A1:A2")}, (), "cannot be read as an Excel workbook"),
}


@pytest.mark.parametrize("case", list(DAMAGED))
def test_a_damaged_workbook_is_a_422_naming_the_file(api: Any, case: str) -> None:
    parts, drop, message = DAMAGED[case]
    setup_api(api)
    text = detail(upload(api, "damaged.xlsx", workbook(parts, drop), dry_run="true"))
    assert text.startswith("damaged.xlsx cannot be read as an Excel workbook (.xlsx): ") and message in text


def test_an_entity_is_never_expanded() -> None:
    """A harmless entity (expat would expand it quietly) is refused like a bomb: defusedxml reads
    every part."""
    harmless = dtd("worksheet", '<!ENTITY who "expanded">') + _bare(sheet(
        f'<row r="1">{text_cell("A1", "&who;")}</row><row r="2">{text_cell("A2", "x")}</row>', "A1:A2"))
    with pytest.raises(Invalid, match="e.xlsx cannot be read.*declares XML entities"):
        read_table(workbook({SHEET: harmless}), "e.xlsx")


def test_a_damaged_workbook_fails_the_command_with_its_name(project: Project, tmp_path: Path) -> None:
    for name, content in (("types.xlsx", workbook({"[Content_Types].xml": "<x"})),
                          ("cut.xlsx", workbook()[:-200]), ("bomb.xlsx", workbook(DAMAGED["entity_bomb"][0]))):
        path = tmp_path / name
        path.write_bytes(content)
        out = cli(project, "import", str(path), "-c", "c", "-s", "s")
        assert out.exit_code == 1 and f"{name} cannot be read as an Excel workbook" in out.output, out.output
        assert "Traceback" not in out.output


def test_a_workbook_that_unpacks_past_its_size_is_refused(api: Any) -> None:
    """Shared strings that deflate 1,000 to 1: openpyxl would hold them whole."""
    padding = " " * (UNPACK_FLOOR + 1)
    shared = f'<sst xmlns="{MAIN}" count="1" uniqueCount="1"><si><t>title{padding}</t></si></sst>'
    content = workbook({"xl/sharedStrings.xml": shared,
                        SHEET: sheet('<row r="1"><c r="A1" t="s"><v>0</v></c></row>', "A1")})
    assert len(content) < 100_000
    setup_api(api)
    text = detail(upload(api, "packed.xlsx", content, dry_run="true"))
    assert text.startswith("packed.xlsx unpacks to ") and "save it as CSV" in text
