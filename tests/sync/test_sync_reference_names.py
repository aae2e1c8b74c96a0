"""Sync and names that show a reference (issue 35 item 2, docs/names.md): a rename of a target
made on either side renames the records showing it on both, with the entries the side that made
it wrote; a flight made on the device is named from its airline there and at the authority."""
from __future__ import annotations

from tests.api.helpers import make_collection, make_record, make_schema


def test_a_targets_rename_reaches_the_names_on_both_sides(lab):
    authority = lab.project("authority")
    make_schema(authority, "airline", [{"name": "code", "type": "string"}], display_template="{code}")
    make_schema(authority, "flight", [{"name": "carrier", "type": "reference", "restrictions": {"schema": "airline"}},
                                      {"name": "number", "type": "integer"}], display_template="{carrier}{number}")
    make_collection(authority, "nyc", ["airline", "flight"])
    ua = make_record(authority, "nyc", "airline", {"code": "UA"})
    flight = make_record(authority, "nyc", "flight", {"carrier": ua["id"], "number": 1545})
    laptop = lab.follow(authority, "laptop")
    assert laptop.ok("GET", f"/records/{flight['id']}")["natural_name"] == "UA1545"
    # renamed at the authority: the laptop's copy follows on the next pull
    authority.ok("PATCH", f"/records/{ua['id']}", json={"data": {"code": "UX"}})
    laptop.sync()
    assert laptop.ok("GET", f"/records/{flight['id']}")["natural_name"] == "UX1545"
    # made and renamed on the laptop: named there, and at the authority when pushed
    made = make_record(laptop, "nyc", "flight", {"carrier": ua["id"], "number": 7})
    assert made["natural_name"] == "UX7"
    laptop.ok("PATCH", f"/records/{ua['id']}", json={"data": {"code": "UY"}})
    summary = laptop.sync()
    assert summary["conflicts"] == 0 and summary["rejected"] == 0, summary
    for side in (authority, laptop):
        names = {side.ok("GET", f"/records/{rid}")["natural_name"] for rid in (flight["id"], made["id"])}
        assert names == {"UY1545", "UY7"}, side.root.name
