"""The parsed document is cached per content, and Connexion's schema check is remembered per
content (benchbook/http/document.py, issue 14 item 15): same answers, fewer seconds."""
from __future__ import annotations

from pathlib import Path

import pytest
from connexion.exceptions import InvalidSpecification
from connexion.spec import Specification

from benchbook.http import document


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(document.CACHE_ENV, str(folder))
    return folder


def test_the_parsed_document_is_cached_per_content(cache: Path) -> None:
    first = document.load_document()
    files = list(cache.glob("openapi-*.json"))
    assert len(files) == 1 and files[0].name == f"openapi-{document.digest(document.document_text())}.json"
    first["paths"].clear()  # a caller's changes do not reach the cache or the next caller
    second = document.load_document()
    assert second == document.parse(document.document_text()) and second["paths"]
    other = document.document_text().replace("title:", "title: ", 1)
    assert document.load_document(other) == document.parse(other)
    assert len(list(cache.glob("openapi-*.json"))) == 2


def test_an_unwritable_cache_only_costs_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(document.CACHE_ENV, str(blocker / "cache"))
    assert document.load_document() == document.parse(document.document_text())


def test_connexion_checks_a_document_once_and_a_bad_one_every_time(cache: Path) -> None:
    document.skip_known_good_validation()
    document.skip_known_good_validation()  # idempotent
    good = document.load_document()
    Specification.from_dict(good)
    assert len(list(cache.glob("openapi-*.checked-*"))) == 1
    Specification.from_dict(document.load_document())  # checked already: no new marker
    assert len(list(cache.glob("openapi-*.checked-*"))) == 1
    bad = document.load_document()
    bad["paths"]["/health"]["get"]["responses"] = "not a mapping"
    for _ in range(2):
        with pytest.raises(InvalidSpecification):
            Specification.from_dict(bad)
    assert len(list(cache.glob("openapi-*.checked-*"))) == 1
