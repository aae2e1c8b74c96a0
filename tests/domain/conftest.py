"""Fixtures of the domain tests."""
from __future__ import annotations

import pytest

from benchbook.domain.records import lists as record_lists


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """What each index walk of a record page found (``lists._walked``: the ids, or None when it
    ran out of time), in order, while the test runs."""
    found: list[object] = []
    real = record_lists._walked

    def watched(*args: object) -> object:
        found.append(result := real(*args))  # type: ignore[arg-type]
        return result

    monkeypatch.setattr(record_lists, "_walked", watched)
    return found
