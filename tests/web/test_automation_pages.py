"""Automation in Chromium: a workflow written in the editor (its problems shown at their lines
first), runs started on every penguin from the records table while the status bar counts them
(waiting going down, succeeded going up), the runs list and a run's page; the switch."""
from __future__ import annotations

from typing import Any

from tests import patient_http as http
from tests.waiting import until
from tests.web.conftest import PENGUINS
from tests.web.pages import look, open_app

GOOD = """name: penguin-note
record_schema: penguin
triggers:
  manual: {}
steps:
  - id: note
    plugin: benchbook.set-fields
    config:
      fields:
        tag: "{species:.3}-{year}-note"
"""


def test_write_a_workflow_and_watch_the_status_bar_count_its_runs(page: Any, demo_server: str) -> None:
    open_app(page, demo_server, "/automation/workflows/penguin-note?new=1")
    editor = page.get_by_label("Workflow YAML")
    editor.fill(GOOD.replace("benchbook.set-fields", "no-such-plugin").replace("record_schema: penguin", "record_schema: nope"))
    page.get_by_role("button", name="Create workflow").click()
    problems = page.locator("#wf-problems li")
    problems.first.wait_for()
    lines = sorted(problems.evaluate_all("lis => lis.map(li => li.dataset.line)"))
    assert lines == ["2", "7"], lines  # record_schema on line 2, the step's plugin on line 7
    editor.fill(GOOD)
    editor.press("Tab")  # indents inside the editor…
    assert page.evaluate("() => document.activeElement.id") == "wf-text" and editor.input_value().endswith("  ")
    editor.fill(GOOD)
    editor.press("Escape")
    editor.press("Tab")  # …and Escape then Tab moves on: no keyboard trap
    assert page.evaluate("() => document.activeElement.textContent") == "Create workflow"
    page.get_by_role("button", name="Create workflow").click()
    page.wait_for_url("**#/automation/workflows/penguin-note")
    page.get_by_role("heading", name="Run it on records").wait_for()
    look(page, "workflow")

    open_app(page, demo_server, "/c/penguins?schema=penguin&limit=400")
    page.evaluate("""() => {  // every text the status bar's run counts show, in order
        window.seen = [];
        new MutationObserver(() => { const s = document.querySelector('[data-testid=status-succeeded]');
            const w = document.querySelector('[data-testid=status-waiting]');
            if (s && w) window.seen.push([parseInt(w.textContent), parseInt(s.textContent)]); })
          .observe(document.querySelector('.status-bar'), {subtree: true, childList: true, characterData: true});
    }""")
    page.locator("table.records-grid thead input[type=checkbox]").check()
    page.get_by_role("button", name="Run a workflow on selected…").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Workflow").select_option("penguin-note")
    dialog.get_by_role("button", name="Run", exact=True).click()
    page.locator("[data-testid=status-waiting]").wait_for()
    page.wait_for_function("() => window.seen.some(([w, s]) => s > 0)")
    until(lambda: http.get(f"{demo_server}/api/jobs/count", params={"workflow": "penguin-note", "status": "completed"})
               .json()["count"] == PENGUINS, "every penguin-note run to complete")
    # the stretch over, the bar keeps its outcome (even when every run ended between two polls)
    page.wait_for_function(f"""() => {{ const s = document.querySelector('[data-testid=status-succeeded]');
        const w = document.querySelector('[data-testid=status-waiting]');
        return s && w && s.textContent === '{PENGUINS} succeeded' && w.textContent === '0 waiting'; }}""")
    seen = page.evaluate("() => window.seen")
    page.keyboard.press("Escape")  # the run dialog, still open with its answer
    dialog.wait_for(state="hidden")
    page.get_by_role("button", name="Dismiss the finished runs").click()
    page.locator("[data-testid=status-runs]").wait_for(state="detached")
    assert seen, "the status bar never showed the runs"
    succeeded = [s for _, s in seen]
    assert succeeded == sorted(succeeded), f"succeeded went down: {succeeded}"
    assert any(w > 0 for w, _ in seen), f"never saw a waiting run: {seen}"
    tags = {r["data"].get("tag") for r in http.get(f"{demo_server}/api/collections/penguins/records",
                                                     params={"schema": "penguin", "limit": 400}).json()["items"]}
    assert all(t and t.endswith("-note") for t in tags), sorted(map(str, tags))[:5]

    open_app(page, demo_server, "/automation/runs?workflow=penguin-note&status=completed")
    assert f"{PENGUINS} runs" in page.locator(".page-head").inner_text()
    look(page, "runs")
    page.get_by_role("button", name=f"Rerun all {PENGUINS} shown by the filters").click()
    until(lambda: http.get(f"{demo_server}/api/jobs/count", params={"workflow": "penguin-note"}).json()["count"]
               == 2 * PENGUINS, "the reruns to be queued")
    page.get_by_role("table", name="runs").get_by_role("link").first.click()
    page.get_by_role("table", name="steps").wait_for()
    assert "note" in page.get_by_role("table", name="steps").inner_text()
    look(page, "run")


def test_the_switch_pauses_and_resumes(page: Any, demo_server: str) -> None:
    open_app(page, demo_server, "/automation")
    state = page.locator("[data-testid=automation-state]")
    assert state.inner_text() == "Running"
    assert "penguin-tag" in page.get_by_role("list", name="workflows").inner_text()
    look(page, "automation")
    page.get_by_role("button", name="Pause automation").click()
    page.wait_for_function("() => document.querySelector('[data-testid=automation-state]').textContent === 'Paused'")
    assert http.get(f"{demo_server}/api/automation").json()["paused"] is True
    page.locator(".status-bar").get_by_role("link", name="Automation paused").wait_for()
    page.get_by_role("button", name="Resume automation").click()
    page.wait_for_function("() => document.querySelector('[data-testid=automation-state]').textContent === 'Running'")
    assert http.get(f"{demo_server}/api/automation").json()["paused"] is False
