"""The hand-maintained OpenAPI document is valid, covers the spec and names its handlers consistently."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from openapi_spec_validator import validate

ROOT = Path(__file__).resolve().parents[1]
DOCUMENT = ROOT / "openapi" / "openapi.yaml"
SPEC_COVERAGE = Path(__file__).resolve().parents[1].parent / "shared/tools/spec_coverage.py"

HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    loaded = yaml.safe_load(DOCUMENT.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in HTTP_METHODS
    ]


def test_document_is_valid_openapi_3_0(document: dict[str, Any]) -> None:
    assert document["openapi"] == "3.0.3"
    validate(document)


def test_spec_collections_records_and_file_upload_are_covered() -> None:
    if not SPEC_COVERAGE.is_file():
        pytest.skip(f"spec coverage tool not found at {SPEC_COVERAGE}")
    result = subprocess.run(
        [sys.executable, str(SPEC_COVERAGE), str(DOCUMENT.relative_to(ROOT))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode in (0, 1), result.stderr
    missing = [line for line in result.stdout.splitlines() if line.startswith("missing ")]
    ours = [
        line
        for line in missing
        if re.match(r"missing [A-Z]+ /(collections|records)(/|$)", line) or line == "missing POST /files"
    ]
    assert ours == []


def test_operation_ids_are_unique_and_named_tag_dot_function(document: dict[str, Any]) -> None:
    ops = operations(document)
    assert ops, "the document has no operations"
    counts = Counter(operation.get("operationId") for _, _, operation in ops)
    assert [op_id for op_id, n in counts.items() if n > 1] == []
    for method, path, operation in ops:
        op_id = operation.get("operationId")
        tags = operation.get("tags") or []
        assert op_id, f"{method} {path} has no operationId"
        assert tags, f"{method} {path} has no tags"
        assert re.fullmatch(r"[a-z_]+\.[a-z_][a-z0-9_]*", op_id), f"{method} {path}: {op_id!r}"
        module, _ = op_id.split(".")
        assert module == tags[0], f"{method} {path}: {op_id!r} does not start with its tag {tags[0]!r}"
