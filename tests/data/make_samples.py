"""Writes the synthetic sample files of tests/data/ (see README.md there). Deterministic:
running it again gives the same text files (the .xlsx differs only in its timestamps).

    .venv/bin/python tests/data/make_samples.py
"""
from __future__ import annotations

import csv
import json
import math
import random
from datetime import date, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
WEATHER_KINDS = ("drizzle", "rain", "sun", "snow", "fog")


def weather_rows() -> list[dict[str, object]]:
    """Daily weather 2012-01-01 … 2015-12-31 (1,461 days) for a mid-latitude coastal city."""
    rng = random.Random(1461)
    rows = []
    day = date(2012, 1, 1)
    while day <= date(2015, 12, 31):
        season = math.cos((day.timetuple().tm_yday - 200) / 365.25 * 2 * math.pi)  # 1 in July
        t_max = round(15 + 10 * season + rng.gauss(0, 3), 1)
        t_min = round(t_max - 6 - abs(rng.gauss(0, 2.5)), 1)
        wet = rng.random() < 0.45 - 0.25 * season
        precipitation = round(rng.expovariate(1 / 6), 1) if wet else 0.0
        if wet:
            kind = "snow" if t_max < 3 else ("drizzle" if precipitation < 1.5 else "rain")
        else:
            kind = "fog" if rng.random() < 0.08 else "sun"
        rows.append({"date": day.strftime("%Y/%m/%d"), "precipitation": precipitation, "temp_max": t_max,
                     "temp_min": t_min, "wind": round(abs(rng.gauss(3.2, 1.4)), 1), "weather": kind})
        day += timedelta(days=1)
    return rows


WINE_COLUMNS = ("Alcohol", "Malic acid", "Ash", "Alcalinity of ash", "Magnesium", "Total phenols", "Flavanoids",
                "Nonflavanoid phenols", "Proanthocyanins", "Color intensity", "Hue",
                "OD280/OD315 of diluted wines", "Proline")
# per class: (mean, sd) of each column, in the ranges such chemical analyses of wines report
WINE_PROFILE = {
    1: [(13.7, .46), (2.0, .69), (2.46, .23), (17.0, 2.5), (106, 10), (2.84, .34), (2.98, .4), (.29, .07),
        (1.9, .41), (5.5, 1.2), (1.06, .12), (3.16, .36), (1116, 221)],
    2: [(12.3, .54), (1.93, 1.0), (2.24, .32), (20.2, 3.3), (94, 17), (2.26, .55), (2.08, .7), (.36, .12),
        (1.63, .6), (3.1, .9), (1.06, .2), (2.79, .5), (520, 157)],
    3: [(13.15, .53), (3.33, 1.1), (2.44, .18), (21.4, 2.3), (99, 11), (1.68, .36), (.78, .29), (.45, .12),
        (1.15, .41), (7.4, 2.3), (.68, .11), (1.68, .27), (630, 115)],
}
WINE_COUNTS = {1: 59, 2: 71, 3: 48}
CULTIVARS = [{"class": 1, "name": "Cultivar A", "region": "Piedmont"},
             {"class": 2, "name": "Cultivar B", "region": "Piedmont"},
             {"class": 3, "name": "Cultivar C", "region": "Piedmont"}]


def wine_rows() -> list[dict[str, object]]:
    """178 wines of three cultivars (classes 1-3): 13 measured constituents each."""
    rng = random.Random(178)
    rows = []
    for cls, n in WINE_COUNTS.items():
        for _ in range(n):
            row: dict[str, object] = {"class": cls}
            for column, (mean, sd) in zip(WINE_COLUMNS, WINE_PROFILE[cls]):
                value = max(rng.gauss(mean, sd), mean / 4)
                row[column] = round(value) if column in ("Magnesium", "Proline") else round(value, 2)
            rows.append(row)
    return rows


def write_csv(path: Path, rows: list[dict[str, object]], **kwargs: object) -> None:
    encoding = str(kwargs.pop("encoding", "utf-8"))
    with path.open("w", newline="", encoding=encoding) as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator="\n", **kwargs)  # type: ignore[arg-type]
        writer.writeheader()
        writer.writerows(rows)


def main() -> None:
    weather = weather_rows()
    write_csv(HERE / "weather_daily_2012_2015.csv", weather)
    write_csv(HERE / "wine_cultivars.csv", CULTIVARS)
    write_csv(HERE / "wine.csv", wine_rows())
    # one month of the series in the other formats
    january = weather[:31]
    iso = [{**r, "date": r["date"].replace("/", "-")} for r in january]  # type: ignore[attr-defined]
    write_csv(HERE / "weather_2012_01.tsv", iso, delimiter="\t")
    (HERE / "weather_2012_01.json").write_text(json.dumps(iso, indent=2) + "\n", encoding="utf-8")
    (HERE / "weather_2012_01.ndjson").write_text("".join(json.dumps(r) + "\n" for r in iso), encoding="utf-8")
    # a European export: Windows-1252, semicolons, day-first dotted dates, decimal points kept
    stations = [{"station": s, "opened": d, "altitude_m": a, "active": act}
                for s, d, a, act in [("Zürich Fluntern", "01.03.1864", 556, "yes"),
                                     ("Genève Cointrin", "13.12.1949", 411, "yes"),
                                     ("Säntis", "01.09.1882", 2502, "yes"),
                                     ("Bern Zollikofen", "01.01.1864", 553, "no")]]
    write_csv(HERE / "stations_cp1252.csv", stations, delimiter=";", encoding="cp1252")
    write_xlsx(HERE / "weather_2012_01.xlsx", iso)


def write_xlsx(path: Path, rows: list[dict[str, object]]) -> None:
    """The month as a workbook: real date cells, a datetime column, and the day as an Excel
    serial number in a General-formatted column."""
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "January"
    sheet.append(["date", "observed_at", "serial_day", "precipitation", "temp_max", "temp_min", "wind", "weather"])
    for r in rows:
        day = date.fromisoformat(str(r["date"]))
        sheet.append([day, datetime.combine(day, datetime.min.time()).replace(hour=7, minute=30),
                      (day - date(1899, 12, 30)).days, r["precipitation"], r["temp_max"], r["temp_min"], r["wind"],
                      r["weather"]])
    notes = book.create_sheet("Notes")
    notes.append(["about"])
    notes.append(["synthetic sample written by tests/data/make_samples.py"])
    book.save(path)


if __name__ == "__main__":
    main()
