"""The full schemathesis fuzz: every operation with schemathesis's coverage phase (boundary
cases) and 40 generated requests (profile ``ci``; 200 with ``HYPOTHESIS_PROFILE=deep``), where
README's command sends 5 generated ones (``test_schemathesis.py``, whose app, seeded data and
checks this run shares).

Marked ``deep``: README's command leaves it out (pyproject.toml's addopts), ``.ci/run`` runs it
after that command with ``pytest -m deep``. ``conftest.py`` does not even collect this module
unless the marker expression asks for ``deep``: building its 112 tests costs each test process
several seconds.
"""
from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import settings

from tests.fuzz.test_schemathesis import FUZZ_HEALTH, _project, schema, send_and_check

__all__ = ["_project"]  # its autouse fixture: the app served and its data seeded for this module too

pytestmark = [pytest.mark.fuzz, pytest.mark.deep]

THOROUGH = settings.default.max_examples * 4 // 10
"""Examples per operation (profile ``ci``: 40)."""


@schema.parametrize()
@settings(max_examples=THOROUGH, deadline=None, suppress_health_check=FUZZ_HEALTH)
def test_every_operation_thoroughly(case: schemathesis.Case[Any]) -> None:
    send_and_check(case)
