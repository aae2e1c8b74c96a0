"""Display templates using inherited fields (issue 14 item 8): a placeholder naming a field of an
ancestor schema shows the nearest ancestor record's value, and descendants' natural names follow
when that value changes (same transaction, no history entry of their own)."""
from __future__ import annotations

from tests.api.helpers import make_collection, make_record, make_schema


def _penguins(api):
    make_schema(api, "island", [{"name": "name", "type": "string"}, {"name": "found", "type": "date"}],
                display_template="{name}")
    make_schema(api, "colony", [{"name": "code", "type": "string"}], parent="island", display_template="{code}")
    make_schema(api, "penguin", [{"name": "species", "type": "string"}, {"name": "sex", "type": "string"}],
                parent="colony", display_template="{name} {species} {sex} {found:YYYY}")
    # an own field shadows the ancestor's of the same name; the nearest owner answers the rest
    make_schema(api, "chick", [{"name": "species", "type": "string"}], parent="penguin",
                display_template="{species} of {sex} ({code})")
    make_collection(api, "antarctica", ["island", "colony", "penguin", "chick"])
    island = make_record(api, "antarctica", "island", {"name": "Biscoe", "found": "1832-02-15"})
    colony = make_record(api, "antarctica", "colony", {"code": "B1"}, parent=island["id"])
    penguin = make_record(api, "antarctica", "penguin", {"species": "Adelie", "sex": "female"}, parent=colony["id"])
    return island, colony, penguin


def test_a_template_uses_the_nearest_ancestors_value(api):
    _island, colony, penguin = _penguins(api)
    assert penguin["natural_name"] == "Biscoe Adelie female 1832"  # name and found from the island, 2 up
    assert api.ok("GET", f"/records/{penguin['id']}")["natural_name"] == "Biscoe Adelie female 1832"
    chick = make_record(api, "antarctica", "chick", {"species": "hybrid"}, parent=penguin["id"])
    assert chick["natural_name"] == "hybrid of female (B1)"
    listed = api.ok("GET", "/collections/antarctica/records", params={"schema": "penguin"})
    assert [r["natural_name"] for r in listed["items"]] == ["Biscoe Adelie female 1832"]
    assert colony["natural_name"] == "B1"


def test_descendants_follow_an_ancestors_change(api):
    island, colony, penguin = _penguins(api)
    other = make_record(api, "antarctica", "penguin", {"species": "Gentoo", "sex": "male"}, parent=colony["id"])
    before = api.ok("GET", "/audit", params={"entity_type": "record", "limit": 100})["total"]
    renamed = api.ok("PATCH", f"/records/{island['id']}", json={"data": {"name": "Dream"}})
    assert renamed["natural_name"] == "Dream"
    assert api.ok("GET", f"/records/{penguin['id']}")["natural_name"] == "Dream Adelie female 1832"
    assert api.ok("GET", f"/records/{other['id']}")["natural_name"] == "Dream Gentoo male 1832"
    assert api.ok("GET", f"/records/{colony['id']}")["natural_name"] == "B1"  # its template uses no inherited field
    # one entry (the island's edit): the derived names write none of their own
    assert api.ok("GET", "/audit", params={"entity_type": "record", "limit": 100})["total"] == before + 1
    # search finds the followed name
    found = api.ok("GET", "/collections/antarctica/records", params={"search": "Dream", "schema": "penguin"})
    assert {r["id"] for r in found["items"]} == {penguin["id"], other["id"]}
    # a cleared ancestor value renders empty
    api.ok("PATCH", f"/records/{island['id']}", json={"data": {"found": None}})
    assert api.ok("GET", f"/records/{penguin['id']}")["natural_name"] == "Dream Adelie female"


def test_moving_a_record_takes_its_new_ancestors_values(api):
    _island, _colony, penguin = _penguins(api)
    torgersen = make_record(api, "antarctica", "island", {"name": "Torgersen", "found": "1900-01-01"})
    colony = make_record(api, "antarctica", "colony", {"code": "T1"}, parent=torgersen["id"])
    moved = api.ok("PATCH", f"/records/{penguin['id']}", json={"parent_record_id": colony["id"]})
    assert moved["natural_name"] == "Torgersen Adelie female 1900"


def test_an_unknown_field_in_a_template_is_409_naming_it(api):
    make_schema(api, "island", [{"name": "name", "type": "string"}])
    make_schema(api, "shore", [{"name": "beach", "type": "string"}])
    r = api.post("/schemas", json={"name": "penguin", "parent": "island", "fields": [{"name": "species",
                                                                                      "type": "string"}],
                                   "display_template": "{name} {beach} {ghost}"})
    assert r.status_code == 409, r.text
    assert {e["input"] for e in r.json()["errors"]} == {"beach", "ghost"}  # beach: not an ancestor's field
    assert "beach" in r.json()["detail"] and "ghost" in r.json()["detail"]
    make_schema(api, "penguin", [{"name": "species", "type": "string"}], parent="island")
    r = api.patch("/schemas/penguin", json={"display_template": "{species} {nope}"})
    assert r.status_code == 409 and r.json()["errors"][0]["input"] == "nope"
    updated = api.ok("PATCH", "/schemas/penguin", json={"display_template": "{name}: {species}"})
    assert updated["display_template"] == "{name}: {species}"


def test_an_import_names_its_rows_from_ancestors_also_imported_with_them(api):
    _island, colony, _penguin = _penguins(api)
    rows = ("schema_name,id,parent_record_id,name,code,species,sex\n"
            "island,i1,,Dream,,,\n"
            "colony,c1,i1,,D7,,\n"
            "penguin,,c1,,,Chinstrap,male\n"
            f"penguin,,{colony['id']},,,Gentoo,female\n")
    out = api.post("/collections/antarctica/import", files={"file": ("penguins.csv", rows.encode())})
    assert out.status_code == 200, out.text
    listed = api.ok("GET", "/collections/antarctica/records", params={"schema": "penguin", "limit": 10})
    assert sorted(r["natural_name"] for r in listed["items"]) == [
        "Biscoe Adelie female 1832", "Biscoe Gentoo female 1832", "Dream Chinstrap male"]
    # the create entries keep the names the records got
    created = api.ok("GET", f"/audit/batches/{out.json()['batch_id']}/entries", params={"limit": 10})
    assert "Dream Chinstrap male" in {(e["new_data"] or {}).get("natural_name") for e in created["items"]}
