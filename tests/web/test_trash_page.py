"""Recently deleted in Chromium: a record deletion is one line naming its records (the first few
and how many more) and their collection; records deleted in a bulk delete come back after their
plan is shown in sentences, and the line goes; a bulk line and a record deleted alone are purged
behind the confirmation; a deletion restored elsewhere is not listed; a deleted collection and a
deleted field come back."""
from __future__ import annotations

from typing import Any

from tests import patient_http as http
from tests.waiting import until
from tests.web.pages import look, open_app, settle


def make(base: str, name: str, codes: list[str]) -> list[str]:
    origin = {"origin": base}
    http.post(f"{base}/api/schemas", headers=origin, json={"name": name, "display_template": "{code}",
                                                            "fields": [{"name": "code", "type": "string"}]}).raise_for_status()
    http.post(f"{base}/api/collections", headers=origin, json={"name": name + "s", "schemas": [name]}).raise_for_status()
    return [http.post(f"{base}/api/collections/{name}s/records", headers=origin,
                       json={"schema_name": name, "data": {"code": c}}).json()["id"] for c in codes]


def test_delete_records_and_restore_them_from_recently_deleted(page: Any, empty_server: str) -> None:
    base = empty_server
    ids = make(base, "vial", ["V-1", "V-2", "V-3"])
    http.post(f"{base}/api/records/bulk-delete", headers={"origin": base}, json={"ids": ids[:2]}).raise_for_status()
    http.delete(f"{base}/api/records/{ids[2]}", headers={"origin": base}).raise_for_status()
    open_app(page, base, "/trash")
    batch = page.locator("[data-testid=deleted-records]")
    assert batch.count() == 1
    assert batch.locator("strong").inner_text() == "V-1 and V-2"
    assert "2 vials in the collection vials · deleted" in batch.inner_text()
    batch.get_by_role("button", name="Show what restoring brings back").click()
    plan = batch.locator(".plan-box")
    plan.wait_for()
    assert plan.inner_text() == "Restoring brings back 2 records."
    look(page, "trash")
    batch.get_by_role("button", name="Restore").click()
    batch.wait_for(state="detached")  # the restored deletion is no longer listed
    for rid in ids[:2]:
        assert http.get(f"{base}/api/records/{rid}").json()["deleted_at"] is None
    single = page.locator("[data-testid=deleted-record]")
    assert single.locator("strong").inner_text() == "V-3"
    assert "vial in the collection vials · deleted" in single.inner_text()
    single.get_by_role("button", name="Show what restoring brings back").click()
    single.locator(".plan-box").wait_for()
    assert single.locator(".plan-box").inner_text() == "Restoring brings back the record V-3 into the collection vials."
    single.get_by_role("button", name="Purge…").click()
    dialog = page.get_by_role("dialog")
    assert dialog.get_by_role("heading").inner_text() == "Purge vial V-3?"
    assert "for good" in dialog.inner_text()
    dialog.get_by_role("button", name="Purge for good").click()
    dialog.wait_for(state="detached")
    single.wait_for(state="detached")
    assert http.get(f"{base}/api/records/{ids[2]}").status_code == 404
    page.locator("#trash-records ~ p", has_text="No deleted records.").wait_for()
    look(page, "trash-records-empty")


def test_a_bulk_line_names_what_is_still_deleted_and_purges_it_whole(page: Any, empty_server: str) -> None:
    base = empty_server
    origin = {"origin": base}
    ids = make(base, "box", ["B-1", "B-2", "B-3", "B-4", "B-5", "B-6"])
    http.post(f"{base}/api/records/bulk-delete", headers=origin, json={"ids": ids}).raise_for_status()
    http.post(f"{base}/api/records/{ids[0]}/restore", headers=origin).raise_for_status()  # restored since
    open_app(page, base, "/trash")
    line = page.locator("[data-testid=deleted-records]")
    assert line.locator("strong").inner_text() == "B-2, B-3, B-4 and 2 more boxes"
    assert "5 boxes in the collection boxs · deleted" in line.inner_text()
    line.get_by_role("button", name="Show what restoring brings back").click()
    line.locator(".plan-box").wait_for()
    text = line.locator(".plan-box").inner_text()
    assert text == "Restoring brings back 5 records." and "things" not in text and "restores" not in text
    line.get_by_role("button", name="Purge…").click()
    dialog = page.get_by_role("dialog")
    assert dialog.get_by_role("heading").inner_text() == "Purge 5 boxes?"
    assert "Purging removes B-2, B-3, B-4 and 2 more boxes for good" in dialog.inner_text()
    look(page, "trash-purge-bulk")
    dialog.get_by_role("button", name="Purge for good").click()
    dialog.wait_for(state="detached")
    line.wait_for(state="detached")
    assert [http.get(f"{base}/api/records/{rid}").status_code for rid in ids] == [200] + [404] * 5
    assert http.get(f"{base}/api/records/deleted").json()["total"] == 0
    events = http.get(f"{base}/api/audit/events", params={"limit": 1}).json()["items"]
    assert events[0]["batch"]["kind"] == "purge" and events[0]["count"] == 5


def test_a_deletion_restored_elsewhere_is_gone_after_a_reload(page: Any, empty_server: str) -> None:
    base = empty_server
    origin = {"origin": base}
    ids = make(base, "tip", ["P-1", "P-2"])
    batch = http.post(f"{base}/api/records/bulk-delete", headers=origin, json={"ids": ids}).json()["batch_id"]
    open_app(page, base, "/trash")
    page.locator("[data-testid=deleted-records]", has_text="P-1 and P-2").wait_for()
    http.post(f"{base}/api/audit/restore-all", headers=origin, json={"batch": batch}).raise_for_status()
    page.reload()
    page.wait_for_selector("header.top nav")
    settle(page)
    assert page.locator("[data-testid=deleted-records]").count() == 0
    assert page.locator("[data-testid=deleted-record]").count() == 0
    assert "No deleted records." in page.locator("section[aria-labelledby=trash-records]").inner_text()


def test_a_deleted_collection_comes_back(page: Any, empty_server: str) -> None:
    base = empty_server
    make(base, "tube", ["T-1"])
    http.delete(f"{base}/api/collections/tubes", headers={"origin": base}).raise_for_status()
    open_app(page, base, "/trash")
    item = page.locator("[data-testid=deleted-collection]", has_text="tubes")
    item.get_by_role("button", name="Show what restoring brings back").click()
    item.locator(".plan-box").wait_for()
    item.get_by_role("button", name="Restore").click()
    until(lambda: any(c["name"] == "tubes" for c in http.get(f"{base}/api/collections").json()), "tubes to be back")


def test_a_deleted_field_comes_back_with_its_values(page: Any, empty_server: str) -> None:
    base = empty_server
    ids = make(base, "jar", ["J-1"])
    origin = {"origin": base}
    http.post(f"{base}/api/schemas/jar/fields", headers=origin, json={"name": "volume", "type": "float"}).raise_for_status()
    http.patch(f"{base}/api/records/{ids[0]}", headers=origin, json={"data": {"volume": 2.5}}).raise_for_status()
    http.delete(f"{base}/api/schemas/jar/fields/volume", headers=origin).raise_for_status()
    assert "volume" not in http.get(f"{base}/api/records/{ids[0]}").json()["data"]
    open_app(page, base, "/trash")
    item = page.locator("[data-testid=deleted-field]", has_text="volume")
    item.get_by_role("button", name="Show what restoring brings back").click()
    item.locator(".plan-box").wait_for()
    item.get_by_role("button", name="Restore").click()
    until(lambda: http.get(f"{base}/api/records/{ids[0]}").json()["data"].get("volume") == 2.5,
               "the field's value to be back")


def test_a_deleted_record_page_writes_its_plan_in_sentences(page: Any, empty_server: str) -> None:
    base = empty_server
    ids = make(base, "dish", ["D-1"])
    http.delete(f"{base}/api/records/{ids[0]}", headers={"origin": base}).raise_for_status()
    open_app(page, base, f"/r/{ids[0]}")
    plan = page.locator(".warn-box .plan-box")
    plan.wait_for()
    text = plan.inner_text()
    assert "Restoring brings back the record D-1 into the collection dishs." in text
    assert "{" not in text and "can_restore" not in text
    assert page.locator("pre.plan").count() == 0
