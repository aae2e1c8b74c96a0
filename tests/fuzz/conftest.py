"""Collect the full fuzz (``test_fuzz_deep.py``, marked ``deep``) only when it is asked for, and
give every schemathesis test its own node id."""
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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Give each schemathesis test the node id its name already has (``test_every_operation[GET
    /health]``). schemathesis 4.32 under pytest 9 gives all the tests of one function the
    function's bare id, and pytest-xdist's ``--dist loadscope`` keys tests by node id: it ran
    one operation of 112 and reported 2 passed for the whole module."""
    for item in items:
        label = getattr(item, "operation_label", None)
        if label and not item.nodeid.endswith("]"):
            item._id = item._id.with_params(label)  # pytest 9 keeps the id there; there is no public setter
