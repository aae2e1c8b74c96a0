"""Issue 37 item 4 in Chromium: the New record dialog has the record page's controls: a
reference field is a type-ahead picker (typing part of a site's name lists it, picking it links
it) and a file field uploads with a bar and then names the file; the record made holds both,
and the records table shows the file by its name, never its hash (item 1)."""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from tests import patient_http as http
from tests.web.pages import look, open_app


def test_new_record_picks_a_reference_by_typing_and_uploads_a_file(page: Any, empty_server: str,
                                                                    tmp_path: Path) -> None:
    api = f"{empty_server}/api"
    http.post(f"{api}/schemas", json={"name": "site", "display_template": "{name}",
                                       "fields": [{"name": "name", "type": "string"}]}).raise_for_status()
    http.post(f"{api}/schemas", json={"name": "sample", "fields": [
        {"name": "code", "type": "string", "label": "Code"},
        {"name": "site", "type": "reference", "label": "Site", "restrictions": {"schema": "site"}},
        {"name": "scan", "type": "file", "label": "Scan"}]}).raise_for_status()
    http.post(f"{api}/collections", json={"name": "trip", "schemas": ["site", "sample"]}).raise_for_status()
    sites = {name: http.post(f"{api}/collections/trip/records", json={"schema_name": "site", "data": {"name": name}}).json()["id"]
             for name in ("North ridge", "South bay", "Northern fen")}
    scan = tmp_path / "scan-01.txt"
    scan.write_text("counts 1 2 3\n")

    open_app(page, empty_server, "/c/trip?schema=sample")
    page.get_by_role("button", name="New record").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Code").fill("S-1")
    dialog.get_by_label("Site").fill("ridge")  # part of a name: the list comes as one types, no Find press
    options = dialog.get_by_role("list", name="records for site")
    expect(options.get_by_role("button")).to_have_text(["North ridge"])
    options.get_by_role("button", name="North ridge").click()
    expect(dialog.locator(".ref-picker").get_by_role("link", name="North ridge")).to_be_visible()
    dialog.get_by_label("Scan").set_input_files(str(scan))
    expect(dialog.get_by_test_id("uploaded")).to_have_text("Uploaded scan-01.txt (13 B)")
    look(page, "new-record-dialog")
    dialog.get_by_role("button", name="Create record").click()
    expect(dialog).to_be_hidden()

    [made] = http.get(f"{api}/collections/trip/records", params={"schema": "sample"}).json()["items"]
    sha = hashlib.sha256(scan.read_bytes()).hexdigest()
    assert made["data"]["site"] == sites["North ridge"] and made["data"]["scan"] == sha
    row = page.locator("table.records-grid tbody tr").first  # the table names the file and the site
    expect(row).to_contain_text("scan-01.txt")
    expect(row).to_contain_text("North ridge")
    assert sha[:12] not in row.inner_text()
