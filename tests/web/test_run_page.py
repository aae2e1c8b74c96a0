"""Issue 37 items 1 and 8 in Chromium: a run's page names its record (natural name, linked) and
shows what each step returned (a text-stats step's word and character counts), and the run
list has a Record column with the record's name."""
from __future__ import annotations

from typing import Any

from tests import patient_http as http
from tests.waiting import until
from tests.web.pages import look, open_app

WORKFLOW = """name: species-words
record_schema: penguin
triggers:
  manual: {}
steps:
  - id: stats
    plugin: benchbook.text-stats
    inputs:
      text: record.species
"""


def test_a_run_shows_its_record_by_name_and_its_step_outputs(page: Any, demo_server: str) -> None:
    api = f"{demo_server}/api"
    http.put(f"{api}/workflows/species-words", json={"content": WORKFLOW}).raise_for_status()
    penguin = http.get(f"{api}/records", params={"schema": "penguin", "limit": 1}).json()[0]
    run = http.post(f"{api}/workflows/species-words/run", json={"record_id": penguin["id"]}).json()
    until(lambda: http.get(f"{api}/jobs/{run['id']}").json()["status"] in ("completed", "failed"), "the run to end")
    job = http.get(f"{api}/jobs/{run['id']}").json()
    assert job["status"] == "completed", job
    species = http.get(f"{api}/records/{penguin['id']}").json()["data"]["species"]
    words = len(str(species).split())

    open_app(page, demo_server, f"/automation/runs/{run['id']}")
    record = page.locator("dl.props").first.locator("dd").nth(1)
    assert penguin["natural_name"] in record.inner_text() and penguin["id"] not in record.inner_text()
    assert record.get_by_role("link").get_attribute("href").endswith(penguin["id"])
    outputs = page.get_by_label("outputs of stats")
    assert outputs.locator("dt").all_inner_texts()[:2] == list(job["step_executions"][0]["outputs"])[:2]
    shown = dict(zip(outputs.locator("dt").all_inner_texts(), outputs.locator("dd").all_inner_texts()))
    assert shown["words"] == str(words) and shown["characters"] == str(len(str(species))), shown
    look(page, "run-outputs")

    open_app(page, demo_server, "/automation/runs?workflow=species-words")
    row = page.locator("table[aria-label=runs] tbody tr").first
    assert penguin["natural_name"] in row.inner_text()
    header = page.locator("table[aria-label=runs] thead th").all_inner_texts()
    assert "Record" in header
