"""The README and the docs say only what exists (issue 39 item 9; in the spirit of Datasette's
``tests/test_docs.py``).

- Every ``benchbook …`` command line in ``README.md`` and ``docs/**/*.md`` (a fenced code block's
  line, or an inline code span that starts with ``benchbook ``) names a command of the CLI's
  tree, generated or local, and every ``--option`` it uses is one that command (or, before the
  command, the root group) takes. The tree is built once, in process (``build_cli``).
- Every relative markdown link (``[x](docs/y.md#anchor)``) points to a file that exists and an
  ``#anchor`` to a heading of that file, by GitHub's anchor rules.
- Every ``docs/**/*.md`` file is reached from ``README.md`` or another doc: a markdown link to
  it, or its path written out (``docs/web.md``, ``docs/runs/sync.md``).

Each case is one file and one command (or link), so a failure names both.
"""
from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from benchbook.cli.main import build_cli

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
ROOT_OPTIONS = {"--project": True, "--url": True, "--table": False, "--columns": True,
                "--version": False, "--help": False, "-h": False}
"""The root group's options and whether each takes a value (``cli/main.py``)."""

FENCE = re.compile(r"^\s*(```|~~~)")
SPAN = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"(?<!!)\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
PLACEHOLDER = re.compile(r"<[^<>]*>")


def rel(path: Path) -> str:
    """``path`` relative to the repository, as the parametrized ids and messages name it."""
    return path.relative_to(ROOT).as_posix()


def prose_lines(text: str) -> Iterator[tuple[int, str, bool]]:
    """``(line number, line, inside a fenced block)`` for every line but the fences themselves."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        yield number, line, fenced


def fenced_commands(lines: list[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """The fenced lines' ``benchbook`` commands: ``\\`` continuations joined, a leading ``$ ``
    dropped, each part of ``a && b``, ``a; b`` or ``a | b`` that runs ``benchbook`` (also as
    ``.venv/bin/benchbook``)."""
    joined: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, line in lines:
        if pending is not None:
            number, line = pending[0], pending[1] + " " + line.strip()
            pending = None
        if line.rstrip().endswith("\\"):
            pending = (number, line.rstrip()[:-1])
            continue
        joined.append((number, line))
    if pending is not None:
        joined.append(pending)
    for number, line in joined:
        line = re.sub(r"^\s*\$\s+", "", line)
        line = re.sub(r"\s#.*$", "", line)  # a shell comment (after a space)
        for part in re.split(r"\s*(?:&&|\|\||;|\|)\s*", line):
            part = re.sub(r"^(\S*/)?benchbook(?=\s|$)", "benchbook", part.strip())
            if part.startswith("benchbook ") or part == "benchbook":
                yield number, part


def doc_commands() -> list[tuple[str, int, str]]:
    """Every ``(file, line, command)`` the README and the docs show."""
    found: list[tuple[str, int, str]] = []
    for path in DOCS:
        fence: list[tuple[int, str]] = []
        for number, line, fenced in prose_lines(path.read_text(encoding="utf-8")):
            if fenced:
                fence.append((number, line))
                continue
            if fence:
                found += [(rel(path), n, c) for n, c in fenced_commands(fence)]
                fence = []
            for match in SPAN.finditer(line):
                code = match.group(2).strip()
                if code.startswith("benchbook "):
                    found.append((rel(path), number, code))
        found += [(rel(path), n, c) for n, c in fenced_commands(fence)]
    return found


@dataclass(frozen=True)
class Words:
    """A command line cut into shell words, placeholders (``<the run's id>``, ``ID``, ``…``)
    kept as words that are no option."""

    words: list[str]

    @classmethod
    def of(cls, command: str) -> Words:
        text = PLACEHOLDER.sub("PLACEHOLDER", command).replace("…", " ")
        words = shlex.split(text)
        # an optional part written [--schema S]: its brackets are not the command's
        words = [w[1:] if w.startswith("[-") else w for w in words]
        words = [w.rstrip("]") if w.startswith("-") else w for w in words]
        return cls([w for w in words if w])


def option_names(command: click.Command) -> dict[str, bool]:
    """Every spelling of ``command``'s options (``--x``, ``--no-x``, ``-o``), each with whether
    it takes a value."""
    names: dict[str, bool] = {}
    for param in command.get_params(click.Context(command)):
        if isinstance(param, click.Option):
            takes = not param.is_flag and not param.count
            for name in [*param.opts, *param.secondary_opts]:
                names[name] = takes
    return names


def resolve(cli: click.Group, command: str) -> tuple[list[str], click.Command | None, list[str]]:
    """Follow ``command``'s words down the tree: ``(the path found, the command reached or
    None, the problems)``. A placeholder where a command's name stands (``benchbook <tag>
    <operation>``) ends the walk without a problem."""
    words = Words.of(command).words[1:]
    problems: list[str] = []
    i = 0
    while i < len(words) and words[i].startswith("-"):  # the root group's options
        name, _, inline = words[i].partition("=")
        if name not in ROOT_OPTIONS:
            return [], None, [f"{name} is not an option of benchbook itself"]
        i += 2 if ROOT_OPTIONS[name] and not inline else 1
    path: list[str] = []
    current: click.Command = cli
    while isinstance(current, click.Group) and i < len(words):
        word = words[i]
        if word == "PLACEHOLDER":
            return path, None, []
        sub = current.get_command(click.Context(current), word)
        if sub is None:
            where = " ".join(["benchbook", *path])
            return path, None, [f"{where} has no command {word!r}"]
        path.append(word)
        current = sub
        i += 1
    if isinstance(current, click.Group):
        if any(not w.startswith("-") for w in words[i:]):
            return path, None, [f"benchbook {' '.join(path)} is a group, not a command"]
        return path, current, []
    names = option_names(current)
    for word in words[i:]:
        if not re.match(r"^--?[A-Za-z]", word) or word == "PLACEHOLDER":
            continue
        name = word.partition("=")[0]
        if name not in names:
            problems.append(f"benchbook {' '.join(path)} takes no {name}")
    return path, current, problems


COMMANDS = doc_commands()


@pytest.fixture(scope="module")
def cli() -> click.Group:
    return build_cli()  # type: ignore[no-any-return]


def test_the_docs_show_commands() -> None:
    """The extraction finds what the README shows (a guard against a parser that finds nothing)."""
    shown = {command for file, _, command in COMMANDS if file == "README.md"}
    assert "benchbook demo" in shown
    assert any(c.startswith("benchbook records list field-2024") for c in shown)
    assert len(COMMANDS) > 100


@pytest.mark.parametrize(("file", "line", "command"), COMMANDS,
                         ids=[f"{f}:{n}:{c[:60]}" for f, n, c in COMMANDS])
def test_command_exists(cli: click.Group, file: str, line: int, command: str) -> None:
    _, _, problems = resolve(cli, command)
    assert problems == [], f"{file}:{line}: `{command}`: " + "; ".join(problems)


def test_a_wrong_command_is_found(cli: click.Group) -> None:
    """The check itself fails on what does not exist."""
    assert resolve(cli, "benchbook records bulk-delete --ids '[]'")[2] == []
    assert resolve(cli, "benchbook records frobnicate")[2] == ["benchbook records has no command 'frobnicate'"]
    assert resolve(cli, "benchbook records list c --no-such-option")[2] == [
        "benchbook records list takes no --no-such-option"]
    assert resolve(cli, "benchbook --nope demo")[2] == ["--nope is not an option of benchbook itself"]


# ------------------------------------------------------------------------ bench commands

BENCH_SHOWN = [ROOT / "README.md", ROOT / "docs" / "performance.md"]
"""The docs whose ``python bench/….py`` commands are the current ones (``docs/runs/`` keeps
older runs' commands as they were run)."""


def bench_commands() -> list[tuple[str, int, str]]:
    """Every ``(file, line, command)`` running ``python bench/<file>.py`` in :data:`BENCH_SHOWN`."""
    found = []
    for path in BENCH_SHOWN:
        for number, line, _ in prose_lines(path.read_text(encoding="utf-8")):
            for match in re.finditer(r"(?:\.venv/bin/)?python3? (bench/\w+\.py)(?: [^`|#]*)?", line):
                found.append((rel(path), number, match.group(0).strip()))
    return found


BENCH = bench_commands()


@pytest.mark.parametrize(("file", "line", "command"), BENCH, ids=[f"{f}:{n}:{c[:60]}" for f, n, c in BENCH])
def test_bench_command_exists(file: str, line: int, command: str) -> None:
    """The benchmark exists and declares every ``--option`` the command gives it."""
    script = ROOT / command.split()[1]
    assert script.exists(), f"{file}:{line}: `{command}`: no {rel(script)}"
    source = script.read_text(encoding="utf-8")
    unknown = [w for w in shlex.split(command)[2:] if w.startswith("--") and f'"{w.partition("=")[0]}"' not in source]
    assert unknown == [], f"{file}:{line}: `{command}`: {rel(script)} declares no {', '.join(unknown)}"


def test_the_docs_show_bench_commands() -> None:
    assert {c.split()[1] for f, _, c in BENCH if f == "docs/performance.md"} >= {
        "bench/records.py", "bench/imports.py", "bench/automation.py", "bench/sync.py"}


# ----------------------------------------------------------------------------------- links

def anchor(heading: str) -> str:
    """GitHub's anchor of a heading's text: markup and punctuation dropped, lower case, spaces
    to hyphens (``## `bench/sync.py` (issue 34)`` → ``benchsyncpy-issue-34``)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text stays
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of ``path``'s headings (a repeated one as GitHub numbers it: ``x``, ``x-1``)
    and of its HTML anchors (``<a id="x"></a>``, as ``docs/decisions.md`` marks each decision)."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    for _, line, fenced in prose_lines(path.read_text(encoding="utf-8")):
        if fenced:
            continue
        out.update(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", SPAN.sub("", line)))
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        base = anchor(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def doc_links() -> list[tuple[str, int, str]]:
    """Every relative link ``(file, line, target)`` of the README and the docs, outside code."""
    found = []
    for path in DOCS:
        for number, line, fenced in prose_lines(path.read_text(encoding="utf-8")):
            if fenced:
                continue
            for match in LINK.finditer(SPAN.sub("", line)):
                target = match.group(1)
                if not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # http:, mailto: …
                    found.append((rel(path), number, target))
    return found


LINKS = doc_links()


@pytest.mark.parametrize(("file", "line", "target"), LINKS, ids=[f"{f}:{n}:{t}" for f, n, t in LINKS])
def test_link_resolves(file: str, line: int, target: str) -> None:
    source = ROOT / file
    where, _, fragment = target.partition("#")
    linked = (source.parent / where).resolve() if where else source
    assert linked.exists(), f"{file}:{line}: ({target}): no file {where}"
    if fragment:
        assert linked.suffix == ".md", f"{file}:{line}: ({target}): an anchor into a file that is not markdown"
        assert fragment in anchors(linked), (
            f"{file}:{line}: ({target}): {rel(linked)} has no heading whose anchor is #{fragment}")


def test_anchors_follow_github() -> None:
    assert anchor("`bench/sync.py` (issue 34)") == "benchsyncpy-issue-34"
    assert anchor("Sync (`bench/sync.py`; issue 34)") == "sync-benchsyncpy-issue-34"
    assert anchor("Warm processes: a plugin's lifetime") == "warm-processes-a-plugins-lifetime"
    assert anchor("Datetimes, é and ÷") == "datetimes-é-and-"


def references_to(path: Path) -> list[str]:
    """The README and other docs that link to ``path`` or write its path out."""
    spelled = rel(path)
    out = []
    for other in DOCS:
        if other == path:
            continue
        text = other.read_text(encoding="utf-8")
        targets = {(other.parent / t.partition("#")[0]).resolve() for t in LINK.findall(text) if t.partition("#")[0]}
        if path.resolve() in targets or spelled in text:
            out.append(rel(other))
    return out


@pytest.mark.parametrize("doc", [rel(p) for p in DOCS if p.name != "README.md" or p.parent != ROOT])
def test_every_doc_is_reached(doc: str) -> None:
    assert references_to(ROOT / doc), f"{doc}: neither README.md nor another doc links to it or names it"


def test_every_decision_is_in_the_index() -> None:
    """``docs/decisions.md`` opens with one line per decision: every decision below (a top-level
    list item) carries an anchor, and the index links to each anchor once."""
    text = (ROOT / "docs" / "decisions.md").read_text(encoding="utf-8")
    head, _, body = text.partition("\n## Storage\n")
    items = [line for line in body.splitlines() if line.startswith("- ")]
    unmarked = [line[:60] for line in items if not re.match(r'^- <a id="[^"]+"></a>', line)]
    assert unmarked == [], f"docs/decisions.md: decisions without an anchor: {unmarked}"
    marked = [re.match(r'^- <a id="([^"]+)"', line).group(1) for line in items]  # type: ignore[union-attr]
    indexed = re.findall(r"^- \[.+\]\(#([^)]+)\)$", head, re.MULTILINE)
    assert sorted(indexed) == sorted(marked), (
        f"docs/decisions.md: not in the index: {sorted(set(marked) - set(indexed))}; "
        f"indexed twice or to nothing: {sorted(a for a in set(indexed) if indexed.count(a) > 1 or a not in marked)}")


CITATION = re.compile(
    r"DESIGN\.md|service-spec"
    r"|\b[Ss]pec(?:'s\b|\s+section\b|:?\s*\*|:\s*\"|\s+note\b|\s+``|\s+[A-Z][a-z]+\b|\s+\d)"
    r"|(?<![\w.])\([Ss]pec(?::|\s)")
"""A reference to a document that is not in the repository (issue 39 item 8): ``DESIGN.md``,
``service-spec``, or the spec cited by section (``spec *Limits*``, ``(spec: "…")``, ``spec
section``, ``the spec's envelope``, ``spec Versioning 3``, ``spec note A``). A variable named
``spec`` (``spec.list``, ``_port(spec: PortSpec)``, ``{spec!r}``), a format spec or the OpenAPI
spec is not one."""
CITED_ELSEWHERE: set[str] = set()
"""Files whose citations were left to the engineer editing them when this test landed; take a
file out once its citations point inside the repository (the test says when)."""
SHIPPED = {".py", ".js", ".yaml", ".json", ".css", ".html", ".md"}


def shipped_files() -> Iterator[Path]:
    """Every text file under ``src/`` that ships, symbolic links followed (``openapi.yaml`` and
    ``plugin-protocol/`` are links into the package)."""
    for folder, dirs, files in os.walk(ROOT / "src", followlinks=True):
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "node_modules"))
        for name in sorted(files):
            if Path(name).suffix in SHIPPED:
                yield Path(folder) / name


@pytest.mark.parametrize(("text", "cites"), [
    ("(spec *Run status*)", True), ("spec *Limits*", True), ("(spec: *Run list filters*)", True),
    ('(spec: "record changes already made stay")', True), ("the spec's error envelope", True),
    ("(spec: AuditBatchResponse)", True), ("spec section 4", True), ("(spec Versioning 3)", True),
    ("(spec ``--allow-remote``)", True), ("File access (spec note A)", True),
    ("DESIGN.md fixes the codes", True), ("../shared/spec/service-spec.md", True),
    ("if (spec.list) out[k] = raw", False), ("def _port(spec: PortSpec) -> dict:", False),
    ("module_from_spec(spec)", False), ("with spec {spec!r}: {exc}", False),
    ("a format spec: ``{mass:.2f}``", False), ("the OpenAPI spec is served", False),
    ("def __init__(self, spec: Operation) -> None:", False), ("(docs/automation.md *Run status*)", False),
])
def test_the_citation_pattern_finds_what_it_should(text: str, cites: bool) -> None:
    assert bool(CITATION.search(text)) is cites, text


def test_nothing_under_src_cites_a_document_outside_the_repository() -> None:
    """Docstrings, comments and shipped documents cite the project's own contract (the OpenAPI
    document, ``plugin-protocol/``, ``docs/``), which a person who clones the repository has, not
    the service spec or ``DESIGN.md``, which they do not (issue 39 item 8)."""
    found: dict[str, list[str]] = {}
    for path in shipped_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in CITATION.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            hit = f"{rel(path)}:{line}: {text.splitlines()[line - 1].strip()}"
            if hit not in found.setdefault(rel(path), []):
                found[rel(path)].append(hit)
    cited = [hit for file, hits in sorted(found.items()) if file not in CITED_ELSEWHERE for hit in hits]
    assert cited == [], "cite the OpenAPI document, plugin-protocol/ or docs/ instead:\n" + "\n".join(cited)
    done = sorted(CITED_ELSEWHERE - set(found))
    assert done == [], f"no longer cite the spec; take them out of CITED_ELSEWHERE: {done}"
