"""Sync rows (OpenAPI ``SyncRow``, an audit entry's ``sync``; docs/sync.md *Rows and how to resolve
them*): one per clash, refusal or edit-against-delete met when a change was sent to the authority.

A row has exactly ``SyncRow``'s keys (:data:`KEYS`); the device keeps one more, ``field`` (the
field id a ``conflict`` is about, or ``parent_record_id``), which ``GET /remote/conflicts``
answers and an audit entry's ``sync`` leaves out (:func:`shown`).
"""
from __future__ import annotations

from typing import Any

PARENT = "parent_record_id"
"""The ``field`` of a row about a record's place (a move), beside field ids."""

KEYS = ("kind", "field_label", "yours", "theirs", "base", "theirs_actor", "status", "resolution", "message",
        "attempted", "changes")
KINDS = ("conflict", "rejected", "edit_vs_delete")
RESOLUTIONS = ("theirs", "mine", "value", "edited", "delete", "retry", "restore_above")


def row(kind: str, *, message: str, attempted: str, field: str | None = None, field_label: str | None = None,
        yours: Any = None, theirs: Any = None, base: Any = None, theirs_actor: str | None = None,
        changes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A new, open row. ``kind`` one of :data:`KINDS`; ``attempted`` the action the device's
    entry attempted (``create``, ``update``, ``delete``, …); ``changes`` the entry's own
    changes for a refusal or an edit against a delete (nothing the device typed is lost)."""
    assert kind in KINDS
    return {"kind": kind, "field_label": field_label, "yours": yours, "theirs": theirs, "base": base,
            "theirs_actor": theirs_actor, "status": "open", "resolution": None, "message": message,
            "attempted": attempted, "changes": changes, "field": field}


def value_of(record: Any, field: str | None) -> Any:
    """The value ``field`` (a field id, or :data:`PARENT`) names on ``record`` now."""
    return record.parent_id if field == PARENT else record.data.get(str(field))


def shown(rows: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """An entry's rows as the API answers them: exactly :data:`KEYS`, in that order."""
    return [{k: r.get(k) for k in KEYS} for r in rows or []]
