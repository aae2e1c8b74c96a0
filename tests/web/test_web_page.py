"""The web app in a real headless Chromium, against a real ``benchbook serve`` holding the demo.

Each test loads one URL with ``chromium --headless --dump-dom --virtual-time-budget=…`` (the
page's scripts run and their fetches to the server finish before the DOM is printed) and reads
the printed DOM. One test also takes a screenshot and checks it is a full, non-blank PNG.
Skipped when Debian's ``chromium`` is not installed (``.ci/run`` installs it when apt works).
Set ``BENCHBOOK_WEB_SCREENSHOTS=DIR`` to keep the screenshot for a look.
"""
from __future__ import annotations

import os
import shutil
import signal
import struct
import subprocess
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import httpx
import pytest

from benchbook.config import Project
from benchbook.demo import build_demo
from benchbook.persistence.db import open_database
from benchbook.runner import worker
from tests.live_server import served

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
if not os.access(CHROMIUM, os.X_OK):
    pytest.skip("chromium is not installed (Debian package 'chromium'; .ci/run installs it when apt-get "
                "works): the web page tests need a real headless browser", allow_module_level=True)

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage"]
BROWSER_TIMEOUT = 90.0
PENGUINS = 344
ISLANDS = 3


# ---------------------------------------------------------------- a tiny DOM for the printed HTML
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str] = field(default_factory=dict)
    children: list[Node | str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text for c in self.children)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def all(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list[Node]:
        """Every descendant with this tag, class and attribute values (document order)."""
        found: list[Node] = []
        for child in self.children:
            if isinstance(child, str):
                continue
            if ((tag is None or child.tag == tag) and (cls is None or cls in child.classes)
                    and all(child.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())):
                found.append(child)
            found.extend(child.all(tag, cls, **attrs))
        return found

    def one(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> Node:
        found = self.all(tag, cls, **attrs)
        assert len(found) == 1, f"expected one <{tag} class={cls} {attrs}>, found {len(found)}"
        return found[0]


class _Builder(HTMLParser):
    """Builds ``Node``s; leaves out ``<noscript>`` (not shown when scripts run)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document")
        self.stack = [self.root]
        self.hidden = Node("noscript")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "noscript":
            self.stack.append(self.hidden)
            return
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(html: str) -> Node:
    builder = _Builder()
    builder.feed(html)
    builder.close()
    return builder.root


def cells(row: Node) -> list[Node]:
    return [c for c in row.children if isinstance(c, Node) and c.tag in ("td", "th")]


def records_table(dom: Node) -> tuple[list[str], list[list[Node]]]:
    """The one records table: its header texts and its body rows' cells."""
    table = dom.one("table")
    header = [c.text.strip() for c in cells(table.one("thead").one("tr"))]
    rows = [cells(r) for r in table.one("tbody").all("tr")]
    return header, rows


# ---------------------------------------------------------------- the server and the browser
@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``benchbook serve`` on a free port over a fresh demo project; yields its base URL."""
    root = tmp_path_factory.mktemp("web-demo")
    project = Project.init(root / "project")
    assert build_demo(project) == ISLANDS + PENGUINS
    db = open_database(project.database_url)
    try:  # the demo's penguin-tag runs, before the page is looked at: every penguin has its tag
        assert worker.for_database(db, project).drain().completed == PENGUINS
    finally:
        db.engine.dispose()
    with served(root / "project", root / "server.log") as (base, _port):
        yield base


def chromium(url: str, *, screenshot: Path | None = None) -> str:
    """Load ``url`` in a fresh headless Chromium and return the DOM after its scripts ran."""
    with tempfile.TemporaryDirectory(prefix="benchbook-chromium-") as profile:
        args = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", "--virtual-time-budget=10000"]
        if screenshot is not None:
            args += [f"--screenshot={screenshot}", "--window-size=1280,900"]
        proc = subprocess.Popen([*args, url], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=BROWSER_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            pytest.fail(f"chromium did not finish {url} within {BROWSER_TIMEOUT:.0f} s:\n{err.decode()[-3000:]}")
    html = out.decode()
    assert proc.returncode == 0 and "<html" in html, (
        f"chromium exited with {proc.returncode} on {url}:\n{err.decode()[-3000:]}")
    return html


def png_size_and_colours(path: Path) -> tuple[int, int, int]:
    """Width, height and the number of distinct byte values in the decoded pixel rows."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    idat, pos = b"", 8
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + length]
        pos += 12 + length
    return width, height, len(set(zlib.decompress(idat)))


# ---------------------------------------------------------------- the tests
def test_front_page_lists_the_collections(server: str) -> None:
    dom = parse(chromium(server + "/"))
    listed = dom.one("ul", id="collections")
    link = listed.one("a", data_name="penguins")
    assert link.attrs["href"] == "#penguins"
    assert link.one("span", cls="count").text == str(ISLANDS + PENGUINS)
    assert httpx.get(server + "/api/collections").json()[0]["record_count"] == ISLANDS + PENGUINS
    assert "Choose a collection" in dom.one("section", id="content").text
    assert not dom.all(cls="error")


def test_collection_opens_on_its_first_schema(server: str) -> None:
    dom = parse(chromium(server + "/#penguins"))
    content = dom.one("section", id="content")
    assert content.one("h2").text == "penguins"
    assert "active" in dom.one("a", data_name="penguins").classes
    tabs = {a.attrs["data-schema"]: a for a in content.one("nav", cls="tabs").all("a")}
    assert list(tabs) == ["island", "penguin"]
    assert "active" in tabs["island"].classes and "active" not in tabs["penguin"].classes
    assert tabs["island"].one("span", cls="count").text == str(ISLANDS)
    assert tabs["penguin"].one("span", cls="count").text == str(PENGUINS)
    assert tabs["penguin"].attrs["href"] == "#penguins/penguin"
    header, rows = records_table(content)
    assert header == ["Name"]
    assert [[c.text for c in row] for row in rows] == [["Biscoe"], ["Dream"], ["Torgersen"]]
    assert content.one(cls="pager").one("span", cls="range").text == "1–3 of 3"


def test_schema_deep_link_shows_a_readable_page_of_penguins(
        server: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    shot = tmp_path / "penguins.png"
    dom = parse(chromium(server + "/#penguins/penguin", screenshot=shot))
    content = dom.one("section", id="content")
    assert "active" in content.one("a", data_schema="penguin").classes
    header, rows = records_table(content)
    assert header == ["Record", "Island name", "Species", "Sex", "Study year", "Bill length (mm)",
                      "Bill depth (mm)", "Flipper length (mm)", "Body mass (g)", "Field tag"]
    assert len(rows) == 50
    assert content.one(cls="pager").one("span", cls="range").text == f"1–50 of {PENGUINS}"
    first = [c.text for c in rows[0]]  # palmerpenguins' first row
    assert first == ["Adelie male 2007", "Torgersen", "Adelie", "male", "2007", "39.1", "18.7", "181", "3750",
                     "Ade-Tor-2007"]
    numeric = [all("num" in row[i].classes for row in rows) for i in range(len(header))]
    assert numeric == [False, False, False, False, True, True, True, True, True, False]
    ths = cells(content.one("thead").one("tr"))
    assert [("num" in th.classes) for th in ths] == numeric
    missing = [c for row in rows for c in row if "missing" in c.classes]  # row 4 has no measurements
    assert missing and all(c.text == "–" for c in missing)
    assert {row[2].text for row in rows} == {"Adelie"}
    assert {row[1].text for row in rows} <= {"Torgersen", "Biscoe", "Dream"}
    # floats of a column share their decimals: 18.0 beside 18.7
    assert all("." in row[6].text for row in rows if "missing" not in row[6].classes)
    pager = content.one(cls="pager")
    assert pager.one(cls="disabled").text == "‹ previous"
    assert pager.one("a", rel="next").attrs["href"] == "#penguins/penguin/2"

    width, height, colours = png_size_and_colours(shot)
    assert (width, height) == (1280, 900)
    assert colours > 20, "the screenshot looks blank"
    keep = os.environ.get("BENCHBOOK_WEB_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / f"{request.node.name}.png")


def test_last_page_deep_link(server: str) -> None:
    dom = parse(chromium(server + "/#penguins/penguin/7"))
    content = dom.one("section", id="content")
    _header, rows = records_table(content)
    assert len(rows) == PENGUINS - 300
    pager = content.one(cls="pager")
    assert pager.one("span", cls="range").text == f"301–{PENGUINS} of {PENGUINS}"
    assert pager.one(cls="disabled").text == "next ›"
    assert pager.one("a", rel="prev").attrs["href"] == "#penguins/penguin/6"
    assert {row[2].text for row in rows} == {"Chinstrap"}  # palmerpenguins ends with Chinstraps


def test_search_deep_link_finds_the_matching_records(server: str) -> None:
    content = parse(chromium(server + "/#penguins/penguin?q=chinstrap")).one("section", id="content")
    assert content.one("input", name="q").attrs["value"] == "chinstrap"
    assert content.one("a", data_schema="penguin").one("span", cls="count").text == "68"  # tabs count matches
    assert content.one("a", data_schema="island").attrs["href"] == "#penguins/island?q=chinstrap"
    _, rows = records_table(content)
    assert len(rows) == 50 and {row[2].text for row in rows} == {"Chinstrap"}
    pager = content.one(cls="pager")
    assert pager.one("span", cls="range").text == "1–50 of 68"  # palmerpenguins holds 68 Chinstraps
    assert pager.one("a", rel="next").attrs["href"] == "#penguins/penguin/2?q=chinstrap"
    none = parse(chromium(server + "/#penguins/penguin?q=emperor")).one("section", id="content")
    assert "No Penguin record matches “emperor”" in none.one("p", cls="empty").text
    assert none.one("p", cls="empty").one("a").attrs["href"] == "#penguins/penguin"


def test_sort_deep_link_orders_by_a_column_and_headers_toggle_it(server: str) -> None:
    content = parse(chromium(server + "/#penguins/penguin?sort=body_mass_g%3Adesc")).one("section", id="content")
    header, rows = records_table(content)
    mass = header.index("Body mass (g) ▼")
    assert [row[mass].text for row in rows[:1]] == ["6300"]  # the heaviest: a Gentoo male of 2007
    masses = [int(row[mass].text) for row in rows]
    assert masses == sorted(masses, reverse=True)
    heading = content.one("th", aria_sort="descending")
    assert heading.one("a", cls="sort").attrs["href"] == "#penguins/penguin"  # a third click: id order again
    species = content.all("a", cls="sort")[2]
    assert species.text == "Species" and species.attrs["href"] == "#penguins/penguin?sort=species"
    last = parse(chromium(server + "/#penguins/penguin/7?sort=body_mass_g")).one("section", id="content")
    _, rows = records_table(last)
    assert [row[mass].text for row in rows[-2:]] == ["–", "–"]  # the two without a mass come last


def test_unknown_collection_shows_the_servers_reason(server: str) -> None:
    dom = parse(chromium(server + "/#nope"))
    error = dom.one("section", id="content").one("p", cls="error")
    assert error.text == "Could not show “nope”: collection 'nope' not found"


def test_api_docs_render_swagger_ui(server: str) -> None:
    html = chromium(server + "/docs/")
    assert "swagger-ui" in html
    dom = parse(html)
    paths = {n.attrs["data-path"] for n in dom.all(cls="opblock-summary-path")}  # drawn by Swagger UI's JS
    assert {"/health", "/collections", "/collections/{dataset_name}/records"} <= paths
