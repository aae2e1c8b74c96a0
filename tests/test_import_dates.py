"""Import item 3: dates and datetimes in the forms real files use, with the collection's
timezone rule."""
from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from benchbook.domain.catalog.dtypes import ValueProblem
from benchbook.domain.imports.dates import DateRules, to_date, to_datetime
from benchbook.settings.config import Project
from tests.import_helpers import DATA, cli, collection, ok, schema, shown

AUTO = DateRules()
DAY = DateRules(dayfirst=True)
MONTH = DateRules(dayfirst=False)


@pytest.mark.parametrize(("text", "rules", "expected"), [
    ("2012-01-31", AUTO, date(2012, 1, 31)),
    ("20120131", AUTO, date(2012, 1, 31)),
    ("2012/01/31", AUTO, date(2012, 1, 31)),
    ("2012/1/5", AUTO, date(2012, 1, 5)),
    ("2012.01.31", AUTO, date(2012, 1, 31)),
    ("2012-W05-2", AUTO, date(2012, 1, 31)),
    ("2012W052", AUTO, date(2012, 1, 31)),
    ("2012-W05", AUTO, date(2012, 1, 30)),
    ("01/02/2012", MONTH, date(2012, 1, 2)),
    ("01/02/2012", DAY, date(2012, 2, 1)),
    ("31.01.2012", AUTO, date(2012, 1, 31)),  # dots: day first
    ("40939", AUTO, date(2012, 1, 31)),  # Excel serial as text
    (40939, AUTO, date(2012, 1, 31)),
    ("31 Jan 2012", DateRules(date_format="%d %b %Y"), date(2012, 1, 31)),
    (datetime(2012, 1, 31), AUTO, date(2012, 1, 31)),
])
def test_date_forms(text: object, rules: DateRules, expected: date) -> None:
    assert to_date(text, rules) == expected


@pytest.mark.parametrize(("text", "rules", "expected"), [
    ("2012-01-31T07:30", AUTO, datetime(2012, 1, 31, 7, 30)),
    ("2012-01-31 07:30:15.25", AUTO, datetime(2012, 1, 31, 7, 30, 15, 250000)),
    ("2012/01/31 7:30", AUTO, datetime(2012, 1, 31, 7, 30)),
    ("01/31/2012 07:30 PM", AUTO, datetime(2012, 1, 31, 19, 30)),
    ("31/01/2012 12:05 am", DAY, datetime(2012, 1, 31, 0, 5)),
    ("2012-01-31T07:30:00Z", AUTO, datetime(2012, 1, 31, 7, 30, tzinfo=UTC)),
    ("2012/01/31 07:30 +0200", AUTO, datetime(2012, 1, 31, 7, 30, tzinfo=timezone(timedelta(hours=2)))),
    (40939.3125, AUTO, datetime(2012, 1, 31, 7, 30)),
    ("2012-01-31", AUTO, datetime(2012, 1, 31)),
])
def test_datetime_forms(text: object, rules: DateRules, expected: datetime) -> None:
    assert to_datetime(text, rules) == expected


@pytest.mark.parametrize("text", ["2012/13/01", "32/01/2012", "2012", "1234", "yesterday", "01/02/12",
                                  "2012-01-31 07:30"])
def test_what_is_not_a_date(text: str) -> None:
    with pytest.raises(ValueProblem) as caught:
        to_date(text, AUTO)
    assert caught.value.type_ == "date_parsing"
    assert "YYYY-MM-DD" not in caught.value.msg and "without time" not in caught.value.msg


def test_a_date_format_rules_the_day_month_forms() -> None:
    rules = DateRules(date_format="%d/%m/%Y")
    assert to_date("01/02/2012", rules) == date(2012, 2, 1)
    assert to_date("2012-02-01", rules) == date(2012, 2, 1)  # unambiguous forms still read
    with pytest.raises(ValueProblem, match="nor of the date format '%d/%m/%Y'"):
        to_date("02-01-2012 x", rules)


def test_day_order_is_decided_per_column() -> None:
    assert AUTO.for_column(["01/02/2012", "13/02/2012"]).dayfirst is True
    assert AUTO.for_column(["01/02/2012", "02/13/2012"]).dayfirst is False
    assert MONTH.for_column(["13/02/2012"]).dayfirst is False  # the option wins


def test_a_day_first_column_is_read_day_first_throughout(tmp_project: Project, tmp_path: Path) -> None:
    schema(tmp_project, "obs", [{"name": "on", "type": "date"}, {"name": "n", "type": "integer"}])
    collection(tmp_project, "c", ["obs"])
    source = tmp_path / "eu.csv"
    source.write_text("on,n\n01/02/2012,1\n13/02/2012,2\n")
    out = ok(tmp_project, "import", str(source), "-c", "c", "-s", "obs")
    assert "dates like '01/02/2012' were read day first" in out.output
    assert [d["on"] for d in shown(tmp_project, "c", "obs")] == ["2012-02-01", "2012-02-13"]
    us = tmp_path / "us.csv"
    us.write_text("on,n\n01/02/2012,3\n")
    out = ok(tmp_project, "import", str(us), "-c", "c", "-s", "obs")
    assert "read month first (dayfirst reads them day first)" in out.output
    ok(tmp_project, "import", str(us), "-c", "c", "-s", "obs", "--dayfirst")
    assert [d["on"] for d in shown(tmp_project, "c", "obs")][2:] == ["2012-01-02", "2012-02-01"]


def test_datetimes_follow_the_collections_timezone(tmp_project: Project, tmp_path: Path) -> None:
    schema(tmp_project, "obs", [{"name": "at", "type": "datetime"},
                                {"name": "at_utc", "type": "datetime", "restrictions": {"timezone": "UTC"}}])
    collection(tmp_project, "zurich", ["obs"], timezone="Europe/Zurich")
    source = tmp_path / "t.csv"
    source.write_text("at,at_utc\n2012/07/01 12:00,2012/07/01 12:00\n2012-01-31T07:30:00Z,\n")
    ok(tmp_project, "import", str(source), "-c", "zurich", "-s", "obs")
    rows = shown(tmp_project, "zurich", "obs")
    assert rows[0] == {"at": "2012-07-01T12:00:00+02:00", "at_utc": "2012-07-01T12:00:00+00:00"}
    assert rows[1] == {"at": "2012-01-31T08:30:00+01:00"}  # an offset in the file wins


def test_excel_date_cells_and_serial_numbers(tmp_project: Project) -> None:
    schema(tmp_project, "day", [{"name": "date", "type": "date"}, {"name": "observed_at", "type": "datetime"},
                                {"name": "serial_day", "type": "date"}, {"name": "weather", "type": "string"}])
    collection(tmp_project, "w", ["day"])
    out = ok(tmp_project, "import", str(DATA / "weather_2012_01.xlsx"), "-c", "w", "-s", "day")
    assert "columns that name no field of schema 'day' were not imported: precipitation, temp_max, temp_min, " \
           "wind" in out.output
    first = shown(tmp_project, "w", "day")[0]
    assert first == {"date": "2012-01-01", "observed_at": "2012-01-01T07:30:00+00:00", "serial_day": "2012-01-01",
                     "weather": "sun"}


def test_a_date_with_a_time_is_refused_for_a_date_field(tmp_project: Project, tmp_path: Path) -> None:
    schema(tmp_project, "obs", [{"name": "on", "type": "date"}])
    collection(tmp_project, "c", ["obs"])
    source = tmp_path / "t.csv"
    source.write_text("on\n2012-01-31 07:30\n")
    out = cli(tmp_project, "import", str(source), "-c", "c", "-s", "obs")
    assert out.exit_code == 1
    assert "on: '2012-01-31 07:30' has a time of day; the field holds dates (1 row, line 2)" in out.output
