"""The web app's pure helpers checked with Node's own test runner (issue 39 item 11): the filter
tree and field catalogue (``lib/filter-tree.js``), names from words (``lib/names.js``) and the
history's words (``lib/history-words.js``), imported as the ES modules the browser loads, with no
browser. ``tests/js/*.test.js`` hold the cases; this runs them with ``node --test`` and fails with
Node's report when one fails. Skipped, saying why, where Node is not installed (CI installs it)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.waiting import HANG

ROOT = Path(__file__).resolve().parents[1]
NODE = shutil.which("node")


@pytest.mark.skipif(NODE is None, reason="node is not installed (Debian package nodejs): the JavaScript helpers' tests need it")
def test_the_web_app_s_pure_helpers_pass_node_s_test_runner() -> None:
    files = sorted(str(p) for p in (ROOT / "tests" / "js").glob("*.test.js"))
    assert files, "no JavaScript tests found under tests/js"
    done = subprocess.run([str(NODE), "--test", *files], check=False, cwd=ROOT, capture_output=True, text=True, timeout=HANG)
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    assert "# fail 0" in report and "# pass 0" not in report, report
