"""Import item 5: parents by key (``--parent-key``, a ``parent`` column) instead of pasted record
ids; ``import --help`` documents every special column."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchbook.domain.imports.columns import SPECIAL_COLUMNS
from benchbook.domain.imports.parents import ParentKey
from benchbook.settings.config import Project
from tests.import_helpers import DATA, cli, collection, ok, records, schema


@pytest.fixture
def cultivars(tmp_project: Project) -> Project:
    """The wine data set's three cultivars, as the parents of its wines."""
    ok(tmp_project, "import", str(DATA / "wine_cultivars.csv"), "-c", "wines", "--create-schema", "-s", "cultivar")
    return tmp_project


def parents_by_class(project: Project) -> dict[int, str]:
    listed = json.loads(ok(project, "records", "list", "wines", "--schema", "cultivar").stdout)["items"]
    return {item["data"]["class"]: item["id"] for item in listed}


def test_wines_find_their_cultivar_by_class(cultivars: Project) -> None:
    out = ok(cultivars, "import", str(DATA / "wine.csv"), "-c", "wines", "--create-schema", "-s", "wine",
             "--parent-key", "cultivar.class")
    assert "created 178," in out.stdout and "  class:" not in out.output  # the key column is no field
    by_class = parents_by_class(cultivars)
    wines = records(cultivars, "wine")
    assert len(wines) == 178
    counts: dict[str, int] = {}
    for wine in wines:
        counts[wine.parent_id] = counts.get(wine.parent_id, 0) + 1
    assert counts == {by_class[1]: 59, by_class[2]: 71, by_class[3]: 48}
    made = json.loads(ok(cultivars, "schemas", "get", "wine").stdout)
    assert made["parent"] == "cultivar" and "class" not in [f["name"] for f in made["fields"]]


def test_a_parent_column_names_the_parent_by_natural_name_or_unique_key(cultivars: Project, tmp_path: Path) -> None:
    schema(cultivars, "bottle", [{"name": "label", "type": "string"}], parent="cultivar")
    ok(cultivars, "collections", "update", "wines", "--schemas", '["cultivar", "bottle"]')
    # the cultivar's natural name is its class (the inferred display template): 1, 2, 3
    source = tmp_path / "bottles.csv"
    source.write_text("parent,label\n1,first\n3,third\n")
    ok(cultivars, "import", str(source), "-c", "wines", "-s", "bottle")
    by_class = parents_by_class(cultivars)
    assert [r.parent_id for r in records(cultivars, "bottle")] == [by_class[1], by_class[3]]
    # by a one-field uniqueness key of the parent schema
    ok(cultivars, "schemas", "set-unique-keys", "cultivar", "--keys", '[["name"]]')
    source.write_text("parent,label\nCultivar B,second\n")
    ok(cultivars, "import", str(source), "-c", "wines", "-s", "bottle")
    assert records(cultivars, "bottle")[-1].parent_id == by_class[2]
    # by id, as before
    source.write_text(f"parent,label\n{by_class[2]},by id\n")
    ok(cultivars, "import", str(source), "-c", "wines", "-s", "bottle")
    assert records(cultivars, "bottle")[-1].parent_id == by_class[2]


def test_a_column_and_field_of_other_names(cultivars: Project, tmp_path: Path) -> None:
    schema(cultivars, "bottle", [{"name": "label", "type": "string"}], parent="cultivar")
    ok(cultivars, "collections", "update", "wines", "--schemas", '["cultivar", "bottle"]')
    source = tmp_path / "bottles.csv"
    source.write_text("Grown as,label\nCultivar C,x\n")
    ok(cultivars, "import", str(source), "-c", "wines", "-s", "bottle", "--parent-key", "Grown as=name")
    assert records(cultivars, "bottle")[0].parent_id == parents_by_class(cultivars)[3]


def test_unknown_and_ambiguous_parents_are_problems(cultivars: Project, tmp_path: Path) -> None:
    schema(cultivars, "bottle", [{"name": "label", "type": "string"}], parent="cultivar")
    ok(cultivars, "collections", "update", "wines", "--schemas", '["cultivar", "bottle"]')
    source = tmp_path / "bottles.csv"
    source.write_text("region,label\nPiedmont,a\nTuscany,b\nTuscany,c\n")
    out = cli(cultivars, "import", str(source), "-c", "wines", "-s", "bottle", "--parent-key", "region")
    assert out.exit_code == 1
    assert "parent: 3 'cultivar' records have region 'Piedmont' (1 row, line 2)" in out.output
    assert "parent: no 'cultivar' record has region 'Tuscany' (2 rows, lines 3, 4)" in out.output
    assert records(cultivars, "bottle") == []
    wrong = cli(cultivars, "import", str(source), "-c", "wines", "-s", "bottle", "--parent-key", "colour")
    assert wrong.exit_code == 1 and "the file has no column 'colour'" in wrong.output
    source.write_text("colour,label\nred,a\n")
    wrong = cli(cultivars, "import", str(source), "-c", "wines", "-s", "bottle", "--parent-key", "colour")
    assert "schema 'cultivar' has no field 'colour'" in wrong.output


def test_the_parent_key_needs_the_parent_schema_for_a_new_schema(cultivars: Project) -> None:
    out = cli(cultivars, "import", str(DATA / "wine.csv"), "-c", "wines", "--create-schema", "--parent-key", "class")
    assert out.exit_code == 1 and "e.g. 'class=SCHEMA.class'" in out.output


def test_parent_key_syntax() -> None:
    assert ParentKey.parse("class") == ParentKey("class", None, "class")
    assert ParentKey.parse("cultivar.class") == ParentKey("class", "cultivar", "class")
    assert ParentKey.parse("Grown as = cultivar.name") == ParentKey("Grown as", "cultivar", "name")


def test_import_help_documents_every_special_column(tmp_project: Project) -> None:
    text = ok(tmp_project, "import", "--help").output
    for column in SPECIAL_COLUMNS:
        assert f"  {column}" in text or f", {column}" in text, column
    for option in ("--create-schema", "--key", "--parent-key", "--dayfirst", "--date-format", "--skip-bad",
                   "--dry-run", "--format", "--delimiter", "--encoding", "--sheet"):
        assert option in text



def sites_and_obs(project: Project) -> None:
    schema(project, "site", [{"name": "name", "type": "string", "required": True},
                             {"name": "code", "type": "integer"}])
    schema(project, "obs", [{"name": "v", "type": "float"}], parent="site")
    ok(project, "schemas", "set-unique-keys", "site", "--keys", '[["code"]]')
    collection(project, "lab", ["site", "obs"])


MIXED = ("schema_name,id,parent_record_id,name,code,v,colour\n"
         "site,s1,,North,1,,\n"
         "obs,,s1,,,1.5,\n"
         "site,s2,,South,2,,\n"
         "obs,,s2,,,2.5,\n"
         "obs,,s1,,,x,\n"             # line 6: a cell that cannot be read
         "site,s3,,,3,,red\n"         # line 7: name missing, a column of no field of site
         "obs,,s3,,,3.5,\n"           # line 8: its parent is a bad row of this file
         "site,s4,,Twin,1,,\n"        # line 9: the unique code of line 2
         "fish,,,,,,\n"               # line 10: no such schema
         "obs,,s2,,,4.5,\n")


def test_rows_name_earlier_rows_as_parents_and_problems_read_the_same_whatever_the_check_step(
        tmp_project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check reads, checks and finishes rows ``CHECK_STEP`` at a time: a row whose parent is
    an earlier row of the file finds it in the same step or an earlier one, and every problem
    reads the same, in the same order, whatever the step."""
    from benchbook.domain.imports import run

    sites_and_obs(tmp_project)
    source = tmp_path / "mixed.csv"
    source.write_text(MIXED)
    outputs = []
    for step in (500, 2, 1):
        monkeypatch.setattr(run, "CHECK_STEP", step)
        out = cli(tmp_project, "import", str(source), "-c", "lab")
        assert out.exit_code == 1 and records(tmp_project) == []
        outputs.append(re.sub(r"\b[0-9A-HJKMNP-TV-Z]{26}\b", "ID", out.output))  # new ids differ per run
    assert outputs[1] == outputs[0] and outputs[2] == outputs[0]
    assert [line for line in outputs[0].splitlines() if "line" in line] == [
        "v: 'x' is not a number (1 row, line 6)",
        "name: a value is required (1 row, line 7)",
        "schema_name: collection 'lab' is not for schema 'fish' (1 row, line 10)",
        "parent record s3 does not exist or is deleted (1 row, line 8)",  # found by the create
        "record 'North' (ID) already has these values for unique key (code) (1 row, line 9)",
    ]
    kept = cli(tmp_project, "import", str(source), "-c", "lab", "--skip-bad")
    assert kept.exit_code == 0, kept.output
    sites = {r.natural_name: r.id for r in records(tmp_project, "site")}
    assert set(sites) == {"North", "South"}
    values = sorted((r.parent_id, next(iter(r.data.values()))) for r in records(tmp_project, "obs"))
    assert values == sorted([(sites["North"], 1.5), (sites["South"], 2.5), (sites["South"], 4.5)])
