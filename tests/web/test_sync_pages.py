"""Sync in Chromium (issue 34): an authority and a device served on loopback (``tests/sync``'s
:class:`Lab`), a real conflict made by editing the same field on both sides and syncing, then the
device's web app: the status bar's pending changes and open conflicts, the Conflicts page
resolving a row by "Keep mine" (and "Set anyway" after a 409), refusals and edits against
deletes in plain words with their own resolutions, the record page's notice, the Sync page's
"Sync now" summary, connect and disconnect through its forms, and an authority's invite shown
once, copied, then revoked (the revoked device's app shows the error)."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.api.helpers import make_collection, make_record, make_schema
from tests.sync.conftest import Lab, Side
from tests.waiting import until
from tests.web.pages import look, open_app, settle

FIELDS = [{"name": "code", "type": "string", "required": True}, {"name": "site", "type": "string"},
          {"name": "depth_m", "type": "float"}]


@pytest.fixture
def lab(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Lab]:
    with ExitStack() as stack:
        yield Lab(request, tmp_path, stack)


def samples(side: Side) -> list[dict[str, Any]]:
    """Schema ``sample`` named by its code, collection ``lake``, samples S0 and S1 at North."""
    make_schema(side, "sample", FIELDS, display_template="{code}")
    make_collection(side, "lake", ["sample"])
    return [make_record(side, "lake", "sample", {"code": f"S{i}", "site": "North", "depth_m": i}) for i in range(2)]


def shows(locator: Any, text: str) -> None:
    """Wait until ``locator`` is one element whose text is ``text`` (the status bar polls)."""
    until(lambda: [t.strip() for t in locator.all_inner_texts()] == [text], f"{locator} to show {text!r}")


def conflicted(lab: Lab) -> tuple[Side, Side, list[dict[str, Any]]]:
    """An authority and device ``laptop`` after a real conflict on S0's site: South on both
    sides, then East on the laptop and West at the authority, and a sync."""
    authority = lab.project("authority")
    made = samples(authority)
    laptop = lab.follow(authority, "laptop")
    s0 = made[0]["id"]
    laptop.ok("PATCH", f"/records/{s0}", json={"data": {"site": "South"}})
    laptop.sync()
    laptop.ok("PATCH", f"/records/{s0}", json={"data": {"site": "East"}})
    authority.ok("PATCH", f"/records/{s0}", json={"data": {"site": "West"}})
    assert laptop.sync()["conflicts"] == 1
    return authority, laptop, made


def test_status_bar_conflicts_page_keep_mine_and_the_record_notice(page: Any, lab: Lab) -> None:
    authority, laptop, made = conflicted(lab)
    s0, s1 = made[0]["id"], made[1]["id"]
    laptop.ok("PATCH", f"/records/{s1}", json={"data": {"depth_m": 7.5}})  # one change not yet sent
    assert laptop.ok("GET", "/remote")["pending"] == 1
    open_app(page, laptop.url, "/")
    bar = page.locator(".status-bar")
    shows(bar.locator("[data-testid=status-pending]"), "1 change to send")
    shows(bar.locator("[data-testid=status-conflicts]"), "1 open conflict")
    assert "Synced" in bar.locator("[data-testid=status-sync]").inner_text()

    bar.get_by_role("link", name="1 open conflict").click()
    page.wait_for_url("**#/remote/conflicts")
    settle(page)
    row = page.locator("[data-testid=conflict-row]")
    row.first.wait_for()
    assert row.count() == 1
    text = row.inner_text()
    assert "changed on both sides" in text and "S0" in text and "site" in text
    assert row.locator("[data-side=yours]").inner_text() == "East"
    assert row.locator("[data-side=theirs]").inner_text() == "West"
    assert row.locator("[data-side=base]").inner_text() == "South"
    assert "Theirs (authority)" in text
    look(page, "sync-conflicts")

    # the record page shows its open row, with a link back to the Conflicts page
    row.get_by_role("link", name="S0").click()
    page.wait_for_url(f"**#/r/{s0}")
    settle(page)
    notice = page.locator("[data-testid=sync-notice]")
    notice.wait_for()
    assert "1 open conflict" in notice.inner_text() and "site (changed on both sides)" in notice.inner_text()
    look(page, "sync-record-notice")
    with page.expect_response(lambda r: "/api/remote/conflicts" in r.url and s1 in r.url):
        open_app(page, laptop.url, f"/r/{s1}")
    page.get_by_role("heading", name="S1", exact=True).wait_for()
    assert page.locator("[data-testid=sync-notice]").count() == 0  # only where there are rows
    open_app(page, laptop.url, f"/r/{s0}")
    page.locator("[data-testid=sync-notice]").get_by_role("link").click()
    page.wait_for_url("**#/remote/conflicts?record=*")
    settle(page)

    # Keep mine: the row leaves the list, the laptop holds East again, the bar's link goes
    row = page.locator("[data-testid=conflict-row]")
    row.get_by_role("button", name="Keep mine").click()
    page.locator("[data-testid=no-conflicts]").wait_for()
    assert row.count() == 0
    assert laptop.ok("GET", f"/records/{s0}")["data"]["site"] == "East"
    assert laptop.ok("GET", "/remote/conflicts") == []
    bar.locator("[data-testid=status-conflicts]").wait_for(state="detached")
    shows(bar.locator("[data-testid=status-pending]"), "2 changes to send")

    # the resolved rows, read-only
    page.get_by_role("link", name="Resolved").click()
    resolved = page.locator("[data-testid=conflict-row][data-status=resolved]")
    resolved.wait_for()
    assert resolved.locator("[data-testid=resolution]").inner_text() == "Resolved: kept yours"
    assert resolved.get_by_role("button").count() == 0
    look(page, "sync-conflicts-resolved")
    laptop.sync()
    assert authority.ok("GET", f"/records/{s0}")["data"]["site"] == "East"
    assert authority.ok("GET", f"/records/{s1}")["data"]["depth_m"] == 7.5


def test_keep_mine_after_the_field_changed_here_offers_set_anyway(page: Any, lab: Lab) -> None:
    _, laptop, made = conflicted(lab)
    s0 = made[0]["id"]
    laptop.ok("PATCH", f"/records/{s0}", json={"data": {"site": "Dock"}})  # changed since the row was made
    open_app(page, laptop.url, "/remote/conflicts")
    row = page.locator("[data-testid=conflict-row]")
    row.get_by_role("button", name="Keep mine").click()
    stale = row.locator("[data-testid=stale]")
    stale.wait_for()
    assert "changed here since" in stale.inner_text()
    assert laptop.ok("GET", f"/records/{s0}")["data"]["site"] == "Dock"
    look(page, "sync-conflict-stale")
    stale.get_by_role("button", name="Set anyway").click()
    page.locator("[data-testid=no-conflicts]").wait_for()
    assert laptop.ok("GET", f"/records/{s0}")["data"]["site"] == "East"


def test_sync_now_shows_what_moved(page: Any, lab: Lab) -> None:
    authority = lab.project("authority")
    made = samples(authority)
    laptop = lab.follow(authority, "laptop")
    laptop.ok("PATCH", f"/records/{made[0]['id']}", json={"data": {"depth_m": 3.5}})
    make_record(authority, "lake", "sample", {"code": "S9", "site": "Bay"})
    open_app(page, laptop.url, "/remote")
    remote = page.locator("[data-testid=remote]")
    assert "laptop" in remote.inner_text() and authority.url in remote.inner_text()
    assert remote.locator("[data-testid=pending]").inner_text() == "1"
    assert page.locator("nav[aria-label=Main] a[aria-current=page]").inner_text() == "Sync"
    page.get_by_role("button", name="Sync now").click()
    summary = page.locator("[data-testid=sync-summary]")
    summary.wait_for()
    assert summary.inner_text().startswith("Sent 1 change, received 1 change.")
    shows(remote.locator("[data-testid=pending]"), "0")
    assert authority.ok("GET", f"/records/{made[0]['id']}")["data"]["depth_m"] == 3.5
    look(page, "sync-remote")


def test_connect_through_the_form_then_disconnect(page: Any, lab: Lab) -> None:
    authority = lab.project("authority")
    samples(authority)
    field = lab.project("field")
    open_app(page, field.url, "/remote")
    assert page.locator(".status-bar [data-testid=status-sync]").count() == 0  # follows no authority
    page.get_by_label("Authority's address").fill(authority.url)
    page.get_by_label("Invite", exact=True).fill("bbi_not-a-real-invite")
    page.get_by_role("button", name="Connect").click()
    error = page.locator("main [role=alert]")
    error.wait_for()
    assert "this invite is unknown, used, expired or revoked" in error.inner_text()
    look(page, "sync-connect")
    invite = authority.ok("POST", "/sync/devices", 201, json={"name": "field"})["invite"]
    page.get_by_label("Invite", exact=True).fill(invite)
    page.get_by_role("button", name="Connect").click()
    summary = page.locator("[data-testid=sync-summary]")
    summary.wait_for()
    assert "received" in summary.inner_text()
    assert "field" in page.locator("[data-testid=remote]").inner_text()
    page.locator(".status-bar [data-testid=status-sync]").wait_for()
    assert field.ok("GET", "/remote")["device"] == "field"
    assert len(field.ok("GET", "/collections/lake/records")["items"]) == 2
    page.get_by_role("button", name="Disconnect…").click()
    dialog = page.get_by_role("dialog")
    assert "stops syncing" in dialog.inner_text()
    dialog.get_by_role("button", name="Disconnect").click()
    page.get_by_role("button", name="Connect").wait_for()
    until(lambda: field.ok("GET", "/remote")["url"] is None, "the field project to follow nobody")


def test_an_authority_invites_a_device_shown_once_and_revokes_it(page: Any, lab: Lab) -> None:
    authority = lab.project("authority")
    samples(authority)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=authority.url)
    open_app(page, authority.url, "/remote")
    assert page.get_by_role("button", name="Connect").count() == 1  # no devices yet: it may follow one instead
    page.get_by_label("New device's name").fill("tablet")
    page.get_by_role("button", name="Invite device").click()
    shown = page.locator("[data-testid=invite]")
    shown.wait_for()
    code = shown.get_by_label("Invite for tablet").input_value()
    assert code.startswith("bbi_")
    page.locator("tr[data-device=tablet]", has_text="invited").wait_for()
    assert page.get_by_role("button", name="Connect").count() == 0  # an authority follows nobody
    look(page, "sync-invite")
    shown.get_by_role("button", name="Copy invite").click()
    until(lambda: page.evaluate("() => navigator.clipboard.readText()") == code, "the invite to be copied")

    tablet = lab.project("tablet")
    tablet.ok("POST", "/remote/connect", json={"url": authority.url, "invite": code})
    page.reload()  # the invite is shown once: not after a reload
    page.wait_for_selector("header.top nav")
    settle(page)
    assert page.locator("[data-testid=invite]").count() == 0 and code not in page.content()
    row = page.locator("tr[data-device=tablet]")
    assert "joined" in row.inner_text()
    row.get_by_role("button", name="Revoke tablet").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_role("button", name="Revoke").click()
    dialog.wait_for(state="detached")
    page.locator("tr[data-device=tablet]", has_text="revoked").wait_for()
    assert [d["state"] for d in authority.ok("GET", "/sync/devices")] == ["revoked"]
    r = tablet.http.post("/remote/sync")
    assert r.status_code == 401
    # the revoked device's app says so, in the status bar and on its Sync page
    open_app(page, tablet.url, "/remote")
    failed = page.locator(".status-bar [data-testid=status-sync-error]")
    failed.wait_for()
    assert "revoked" in failed.inner_text()
    assert "revoked" in page.locator("[data-testid=remote-error]").inner_text()


def test_refusals_and_edits_against_deletes_in_plain_words(page: Any, lab: Lab) -> None:
    authority = lab.project("authority")
    a, b = samples(authority)
    authority.ok("PUT", "/schemas/sample/unique-keys", json={"keys": [["code"]]})
    laptop = lab.follow(authority, "laptop")
    laptop.ok("PATCH", f"/records/{a['id']}", json={"data": {"site": "Kept"}})  # edited here, deleted there
    authority.ok("DELETE", f"/records/{a['id']}", 204)
    authority.ok("PATCH", f"/records/{b['id']}", json={"data": {"site": "Edited"}})  # deleted here, edited there
    laptop.ok("DELETE", f"/records/{b['id']}", 204)
    make_record(authority, "lake", "sample", {"code": "X1", "site": "Authority"})
    mine = make_record(laptop, "lake", "sample", {"code": "X1", "site": "Laptop"})  # refused: X1 is taken
    laptop.sync()
    assert laptop.ok("GET", "/remote")["open_conflicts"] == 3
    open_app(page, laptop.url, "/remote/conflicts")
    rows = page.locator("[data-testid=conflict-row]")
    rows.first.wait_for()
    assert rows.count() == 3
    edited = rows.filter(has_text="edited here, deleted there")
    deleted = rows.filter(has_text="deleted here, edited there")
    refused = rows.filter(has_text="refused by the authority")
    assert [b.inner_text() for b in edited.get_by_role("button").all()] == ["Accept", "Restore with my edit"]
    assert [b.inner_text() for b in deleted.get_by_role("button").all()] == ["Accept", "Delete"]
    assert [b.inner_text() for b in refused.get_by_role("button").all()] == ["Retry", "Dismiss"]
    assert "S0" in edited.inner_text() and "Kept" in edited.inner_text()  # the edit is kept in the row
    assert "S1" in deleted.inner_text() and "Edited" in deleted.inner_text()  # what the authority changed
    assert "X1" in refused.inner_text() and "code" in refused.inner_text()
    look(page, "sync-conflict-kinds")
    edited.get_by_role("button", name="Restore with my edit").click()
    until(lambda: rows.count() == 2, "the restored row to leave the list")
    deleted.get_by_role("button", name="Delete").click()
    until(lambda: rows.count() == 1, "the deleted row to leave the list")
    laptop.ok("PATCH", f"/records/{mine['id']}", json={"data": {"code": "X2"}})  # the fix, then Retry
    refused.get_by_role("button", name="Retry").click()
    page.locator("[data-testid=no-conflicts]").wait_for()
    laptop.sync()
    assert authority.ok("GET", f"/records/{a['id']}")["data"]["site"] == "Kept"
    assert authority.ok("GET", f"/records/{b['id']}")["deleted_at"] is not None
    assert authority.ok("GET", f"/records/{mine['id']}")["data"]["code"] == "X2"
    assert laptop.ok("GET", "/remote/conflicts") == []
