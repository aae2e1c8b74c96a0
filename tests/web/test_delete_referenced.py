"""Deleting a record other records point at, in Chromium (issue 35 item 4, docs/deletes.md): the
record page asks GET /records/{id}/referrers first and offers delete anyway / clear references /
cancel; the records table's bulk delete turns the API's 409 into the same choice."""
from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests import patient_http as http
from tests.web.pages import check_axe, open_app


@pytest.fixture(scope="module")
def fleet(empty_server: str) -> dict[str, Any]:
    """Planes N1..N4; flights F1, F2 on N1, F3 on N2, F4 on N3 and N4; a log on N1."""
    base, origin = empty_server, {"origin": empty_server}

    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        r = http.post(f"{base}/api{path}", headers=origin, json=body)
        r.raise_for_status()
        return dict(r.json())

    plane_ref = {"type": "reference", "restrictions": {"schema": "plane"}}
    post("/schemas", {"name": "plane", "display_template": "{tailnum}", "fields": [{"name": "tailnum", "type": "string"}]})
    post("/schemas", {"name": "flight", "display_template": "F{number}",
                      "fields": [{"name": "number", "type": "integer"}, {"name": "tailnum", **plane_ref}]})
    post("/schemas", {"name": "log", "fields": [{"name": "plane", **plane_ref}]})
    post("/collections", {"name": "nyc", "schemas": ["plane", "flight", "log"]})
    planes = [post("/collections/nyc/records", {"schema_name": "plane", "data": {"tailnum": f"N{i}"}}) for i in range(1, 5)]
    flights = [post("/collections/nyc/records", {"schema_name": "flight", "data": {"number": n, "tailnum": planes[p]["id"]}})
               for n, p in ((1, 0), (2, 0), (3, 1), (4, 2), (5, 3))]
    post("/collections/nyc/records", {"schema_name": "log", "data": {"plane": planes[0]["id"]}})
    return {"planes": planes, "flights": flights}


def record(base: str, rec: dict[str, Any]) -> dict[str, Any]:
    return dict(http.get(f"{base}/api/records/{rec['id']}").json())


def test_the_record_page_says_who_points_at_it_and_offers_the_choices(page: Any, empty_server: str,
                                                                       fleet: dict[str, Any]) -> None:
    n1, n2 = fleet["planes"][:2]
    open_app(page, empty_server, f"/r/{n1['id']}")
    page.get_by_role("button", name="Delete record…").click()
    dialog = page.get_by_role("dialog", name="Other records point at this")
    expect(dialog).to_contain_text("3 records point at this record")
    assert dialog.locator(".referrer-counts li").all_inner_texts() == ["2 flights", "1 log"]
    check_axe(page, "delete-referenced")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_have_count(0)
    assert record(empty_server, n1)["deleted_at"] is None
    page.get_by_role("button", name="Delete record…").click()
    dialog.get_by_role("button", name="Clear references and delete").click()
    page.wait_for_url("**/#/trash")
    assert record(empty_server, n1)["deleted_at"] is not None
    assert [record(empty_server, f)["data"].get("tailnum") for f in fleet["flights"][:2]] == [None, None]
    # delete anyway: the reference stays, pointing at the deleted plane
    open_app(page, empty_server, f"/r/{n2['id']}")
    page.get_by_role("button", name="Delete record…").click()
    expect(dialog).to_contain_text("1 record points at this record")
    dialog.get_by_role("button", name="Delete anyway").click()
    page.wait_for_url("**/#/trash")
    assert record(empty_server, n2)["deleted_at"] is not None
    assert record(empty_server, fleet["flights"][2])["data"]["tailnum"] == n2["id"]


def test_the_bulk_delete_turns_the_409_into_the_same_choice(page: Any, empty_server: str, fleet: dict[str, Any]) -> None:
    n3, n4 = fleet["planes"][2:]
    open_app(page, empty_server, "/c/nyc?schema=plane&sort=natural_name")
    page.get_by_label("Select N3").check()
    page.get_by_label("Select N4").check()
    page.get_by_role("button", name="Delete selected…").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete 2 records").click()
    dialog = page.get_by_role("dialog", name="Other records point at this")
    expect(dialog).to_contain_text("2 records point at the 2 ticked plane records")
    assert dialog.locator(".referrer-counts li").all_inner_texts() == ["2 flights"]
    dialog.get_by_role("button", name="Delete anyway").click()
    expect(dialog).to_have_count(0)
    assert record(empty_server, n3)["deleted_at"] is not None and record(empty_server, n4)["deleted_at"] is not None
    assert record(empty_server, fleet["flights"][4])["data"]["tailnum"] == n4["id"]
