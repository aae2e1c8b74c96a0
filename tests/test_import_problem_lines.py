"""Import problems read as docs/import.md says (issue 36 item 5: a 1,000-row failed dry run
printed 424 lines): one line per field and kind with the count and the first three rows, kind-
less problems on their message's template, and at most ``SHOWN_LINES`` lines, the most rows
first, then one counting the rest."""
from __future__ import annotations

from pathlib import Path

from benchbook.domain.imports.problems import SHOWN_LINES, ProblemLog, lines
from benchbook.settings.config import Project
from tests.import_helpers import cli, collection, records, schema


def test_kindless_problems_group_on_their_template() -> None:
    log = ProblemLog()
    for n in range(2, 426):  # what varies: an id, a quoted name, a path, numbers
        log.add(n, f"record {'01M8HKX1TG6Q03J4JECF9S8Y' + f'{n % 100:02d}'} ('N{n}UA') already holds key (tailnum) "
                   f"given in /data/batch-{n}/flights.csv row {n}")
    log.add(9, "the parent is gone")
    assert [(s.count, s.kind) for s in log.summaries] == [(424, "row"), (1, "row")]
    assert log.summaries[0].text().endswith("(424 rows, lines 2, 3, 4, …)")


def test_lines_show_the_most_rows_first_and_count_the_rest() -> None:
    log = ProblemLog()
    for i in range(SHOWN_LINES + 5):
        for n in range(2, 3 + i):
            log.add(n, f"f{i}: not a number", field=f"f{i}", kind="int_parsing")
    shown = lines(log.summaries, "line")
    assert len(shown) == SHOWN_LINES + 1
    assert shown[0].startswith(f"f{SHOWN_LINES + 4}: not a number ({SHOWN_LINES + 5} rows, lines 2, 3, 4, …)")
    assert shown[-1].startswith("… and 5 more distinct problems in 5 lines")
    assert lines(log.summaries[:2]) == [s.text() for s in reversed(log.summaries[:2])]


def test_a_failed_dry_run_of_1000_rows_prints_a_screenful(tmp_project: Project, tmp_path: Path) -> None:
    names = [f"c{i}" for i in range(30)]
    schema(tmp_project, "wide", [{"name": n, "type": "integer"} for n in names])
    collection(tmp_project, "w", ["wide"])
    source = tmp_path / "wide.csv"
    source.write_text(",".join(names) + "\n" + "".join(
        ",".join(f"x{row}" if i <= row % 30 else str(row) for i in range(30)) + "\n" for row in range(1000)))
    out = cli(tmp_project, "import", str(source), "-c", "w", "-s", "wide", "--dry-run")
    assert out.exit_code == 1
    printed = out.output.splitlines()
    assert len(printed) == SHOWN_LINES + 2, out.output
    assert printed[0].startswith("c0: ") and "(1,000 rows, lines 2, 3, 4, …)" in printed[0]
    assert printed[SHOWN_LINES].startswith("… and 10 more distinct problems in ")
    assert printed[-1] == "error: 1,000 of 1,000 rows have problems: nothing was imported (--skip-bad imports the " \
                          "good rows)"
    assert records(tmp_project) == []
