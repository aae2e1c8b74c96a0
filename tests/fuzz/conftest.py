"""Collect the full fuzz (``test_fuzz_deep.py``, marked ``deep``) only when it is asked for."""
from __future__ import annotations

from pathlib import Path

import pytest


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Skip collecting ``test_fuzz_deep.py`` unless ``-m`` selects ``deep`` (``-m deep``, ``-m
    "deep or fuzz"``): README's command runs with ``-m 'not deep'``, and building the module's
    tests for nothing costs each xdist worker several seconds. ``None`` leaves every other path
    to pytest."""
    if collection_path.name != "test_fuzz_deep.py":
        return None
    wanted = str(config.getoption("markexpr") or "")
    return "deep" not in wanted.replace("not deep", "") or None
