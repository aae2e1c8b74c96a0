"""Fixtures of the domain tests."""
from __future__ import annotations

import pytest

from benchbook.domain.records import lists as record_lists
from tests.domain.data_sets import DataSets


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


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def data_sets(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> DataSets:
    """The module's data sets on each backend in turn (test ids ``[sqlite]``, ``[postgres]``;
    skipped, saying why, without a PostgreSQL server): see :class:`DataSets`."""
    url = request.getfixturevalue("pg_database") if request.param == "postgres" else None
    return DataSets(request.param, url, tmp_path_factory.mktemp(f"data-sets-{request.param}"))
