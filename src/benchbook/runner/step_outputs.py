"""What a step returned, kept in its run's ``step_executions`` so that the run page can show it
(issue 37 item 8: a checksum run showed no checksum or size anywhere).

Each completed step's entry gets ``outputs``: the step's outputs as JSON (dates and datetimes
as ISO text, bytes as ``{"type": "bytes", "size": N}``, a table as ``{"type": "table", "rows":
R, "columns": [...]}``, a number JSON cannot hold (NaN, infinity) or anything else as its text), and ``outputs_bytes``: the
size of that JSON in UTF-8 bytes. Outputs larger than :data:`KEPT_BYTES` are not kept
(``outputs`` null, ``outputs_bytes`` says how large they were): a run's row stays small and
records, not runs, are where data lives (``docs/limits.md``, *Runs*)."""
from __future__ import annotations

import json
import math
from datetime import date, datetime
from typing import Any

KEPT_BYTES = 16 * 1024
"""Outputs whose JSON is larger than this (bytes) are not kept in the run."""


def _plain(value: Any) -> Any:
    """``value`` as something JSON holds (see the module docstring)."""
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return {"type": "bytes", "size": len(value)}
    if hasattr(value, "columns") and hasattr(value, "to_dict"):
        return {"type": "table", "rows": len(value), "columns": [str(c) for c in value.columns]}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # nan, inf, -inf: JSON has no such numbers
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def kept(outputs: dict[str, Any]) -> dict[str, Any]:
    """``{"outputs": … or None, "outputs_bytes": N}`` for a step's ``outputs`` (module docstring)."""
    plain = _plain(outputs)
    size = len(json.dumps(plain, ensure_ascii=False).encode())
    return {"outputs": plain if size <= KEPT_BYTES else None, "outputs_bytes": size}
