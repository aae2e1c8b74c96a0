"""Recently deleted in Chromium: records deleted in a bulk delete come back after their plan is
shown; a record deleted alone is purged behind the confirmation; a deleted collection too."""
from __future__ import annotations

from typing import Any

import httpx

from tests.waiting import until
from tests.web.pages import look, open_app


def make(base: str, name: str, codes: list[str]) -> list[str]:
    origin = {"origin": base}
    httpx.post(f"{base}/api/schemas", headers=origin, json={"name": name, "display_template": "{code}",
                                                            "fields": [{"name": "code", "type": "string"}]}).raise_for_status()
    httpx.post(f"{base}/api/collections", headers=origin, json={"name": name + "s", "schemas": [name]}).raise_for_status()
    return [httpx.post(f"{base}/api/collections/{name}s/records", headers=origin,
                       json={"schema_name": name, "data": {"code": c}}).json()["id"] for c in codes]


def test_delete_records_and_restore_them_from_recently_deleted(page: Any, empty_server: str) -> None:
    base = empty_server
    ids = make(base, "vial", ["V-1", "V-2", "V-3"])
    httpx.post(f"{base}/api/records/bulk-delete", headers={"origin": base}, json={"ids": ids[:2]}).raise_for_status()
    httpx.delete(f"{base}/api/records/{ids[2]}", headers={"origin": base}).raise_for_status()
    open_app(page, base, "/trash")
    batch = page.locator("[data-testid=deleted-records]").first
    assert batch.locator("strong").inner_text().startswith("2 records")
    batch.get_by_role("button", name="Show what restoring brings back").click()
    plan = batch.locator(".plan-box")
    plan.wait_for()
    assert "restores" in plan.inner_text() and "2" in plan.inner_text()
    look(page, "trash")
    batch.get_by_role("button", name="Restore").click()
    until(lambda: all(httpx.get(f"{base}/api/records/{rid}").json()["deleted_at"] is None for rid in ids[:2]),
               "the two records to be live again")
    for rid in ids[:2]:
        assert httpx.get(f"{base}/api/records/{rid}").json()["deleted_at"] is None
    single = page.locator("[data-testid=deleted-record]").first
    single.wait_for()
    assert "V-3" in single.inner_text()
    single.get_by_role("button", name="Purge…").click()
    dialog = page.get_by_role("dialog")
    assert "for good" in dialog.inner_text()
    dialog.get_by_role("button", name="Purge for good").click()
    dialog.wait_for(state="detached")
    assert httpx.get(f"{base}/api/records/{ids[2]}").status_code == 404


def test_a_deleted_collection_comes_back(page: Any, empty_server: str) -> None:
    base = empty_server
    make(base, "tube", ["T-1"])
    httpx.delete(f"{base}/api/collections/tubes", headers={"origin": base}).raise_for_status()
    open_app(page, base, "/trash")
    item = page.locator("[data-testid=deleted-collection]", has_text="tubes")
    item.get_by_role("button", name="Show what restoring brings back").click()
    item.locator(".plan-box").wait_for()
    item.get_by_role("button", name="Restore").click()
    until(lambda: any(c["name"] == "tubes" for c in httpx.get(f"{base}/api/collections").json()), "tubes to be back")


def test_a_deleted_field_comes_back_with_its_values(page: Any, empty_server: str) -> None:
    base = empty_server
    ids = make(base, "jar", ["J-1"])
    origin = {"origin": base}
    httpx.post(f"{base}/api/schemas/jar/fields", headers=origin, json={"name": "volume", "type": "float"}).raise_for_status()
    httpx.patch(f"{base}/api/records/{ids[0]}", headers=origin, json={"data": {"volume": 2.5}}).raise_for_status()
    httpx.delete(f"{base}/api/schemas/jar/fields/volume", headers=origin).raise_for_status()
    assert "volume" not in httpx.get(f"{base}/api/records/{ids[0]}").json()["data"]
    open_app(page, base, "/trash")
    item = page.locator("[data-testid=deleted-field]", has_text="volume")
    item.get_by_role("button", name="Show what restoring brings back").click()
    item.locator(".plan-box").wait_for()
    item.get_by_role("button", name="Restore").click()
    until(lambda: httpx.get(f"{base}/api/records/{ids[0]}").json()["data"].get("volume") == 2.5,
               "the field's value to be back")


def test_a_deleted_record_page_writes_its_plan_in_sentences(page: Any, empty_server: str) -> None:
    base = empty_server
    ids = make(base, "dish", ["D-1"])
    httpx.delete(f"{base}/api/records/{ids[0]}", headers={"origin": base}).raise_for_status()
    open_app(page, base, f"/r/{ids[0]}")
    plan = page.locator(".warn-box .plan-box")
    plan.wait_for()
    text = plan.inner_text()
    assert "Restoring brings back the record D-1 into the collection dishs." in text
    assert "{" not in text and "can_restore" not in text
    assert page.locator("pre.plan").count() == 0
