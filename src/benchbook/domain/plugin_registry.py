"""The registry of discovered plugins: each plugin's ``describe_result`` as captured once at
discovery (plugin-protocol/README.md *Capabilities* 1), where it came from and whether it can run.
The runner's discovery writes it; runs read the captured contract from here, never from a live
process."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from benchbook.domain.errors import NotFound
from benchbook.domain.plugin_shapes import PluginResponse
from benchbook.persistence.tables import Plugin, utcnow

CONTRACT_KEYS = ("name", "description", "category", "capabilities", "inputs", "outputs", "config_schema", "batch")
"""What a ``describe_result`` holds besides ``type`` and ``id``."""


@dataclass
class Described:
    """One plugin as discovery found it: ``contract`` is its ``describe_result`` (empty when
    describing failed), ``tier`` ``"1"``, ``"2"`` or ``"builtin"``, ``source`` where it came
    from, ``status`` ``ok`` / ``error`` / ``no_container_runtime`` with ``error`` saying why,
    ``launch`` how to start it (command, folder, image, limits)."""

    id: str
    tier: str
    builtin: bool
    source: str
    status: str = "ok"
    error: str | None = None
    contract: dict[str, Any] = field(default_factory=dict)
    launch: dict[str, Any] = field(default_factory=dict)


def plugin_response(row: Plugin) -> PluginResponse:
    """PluginResponse: the contract (``batch`` false when the plugin did not say) plus ``tier``, ``builtin``, ``source``, ``status``, ``error``,
    ``described_at``."""
    return {"id": row.id, "name": row.name, "description": row.description, "category": row.category,
            "capabilities": row.capabilities, "inputs": row.inputs, "outputs": row.outputs,
            "config_schema": row.config_schema, "batch": row.batch, "tier": row.tier, "builtin": row.builtin, "source": row.source,
            "status": row.status, "error": row.error, "described_at": row.described_at.isoformat()}


def list_plugins(session: Session) -> list[PluginResponse]:
    """Every registered plugin (failed ones included, with their error), by id."""
    return [plugin_response(p) for p in session.scalars(select(Plugin).order_by(Plugin.id))]


def find_plugin(session: Session, plugin_id: str) -> Plugin:
    """The registered plugin ``plugin_id``; raises ``NotFound``."""
    row = session.get(Plugin, plugin_id)
    if row is None:
        raise NotFound(f"plugin {plugin_id!r} not found (POST /plugins/refresh discovers new ones)")
    return row


def runnable(session: Session, plugin_id: str) -> dict[str, Any]:
    """The registered plugin ``plugin_id`` as the step runner needs it: its PluginResponse plus
    ``launch``. Raises ``NotFound``."""
    row = find_plugin(session, plugin_id)
    return {**plugin_response(row), "launch": row.launch}


def is_empty(session: Session) -> bool:
    """Whether no plugin was ever registered (discovery has not run on this database)."""
    return session.scalar(select(Plugin.id).limit(1)) is None


def replace_all(session: Session, found: list[Described]) -> dict[str, list[str]]:
    """Make the registry hold exactly ``found``. Two plugins claiming one id: the first keeps it,
    the later ones are registered under ``<id>@<source>`` with status ``error``. Returns the
    ids ``added``, ``changed`` (contract, tier, source, status or error differ), ``removed``,
    ``unchanged`` and ``failed`` (status not ``ok``)."""
    seen: dict[str, Described] = {}
    for d in found:
        if d.id in seen:
            d.error = f"id {d.id!r} is already used by the plugin from {seen[d.id].source}"
            d.status, d.id = "error", f"{d.id}@{d.source}"
        seen[d.id] = d
    report: dict[str, list[str]] = {"added": [], "changed": [], "removed": [], "unchanged": [], "failed": []}
    old = {p.id: p for p in session.scalars(select(Plugin))}
    for pid, gone in old.items():
        if pid not in seen:
            session.delete(gone)
            report["removed"].append(pid)
    for pid, d in seen.items():
        values = {"name": d.contract.get("name") or pid, "description": d.contract.get("description", ""),
                  "category": d.contract.get("category", ""), "capabilities": d.contract.get("capabilities", []),
                  "inputs": d.contract.get("inputs", {}), "outputs": d.contract.get("outputs", {}),
                  "config_schema": d.contract.get("config_schema", {}), "batch": bool(d.contract.get("batch")),
                  "tier": d.tier, "builtin": d.builtin,
                  "source": d.source, "status": d.status, "error": d.error, "launch": d.launch}
        row = old.get(pid)
        if row is None:
            session.add(Plugin(id=pid, described_at=utcnow(), **values))
            report["added"].append(pid)
        elif any(getattr(row, k) != v for k, v in values.items()):
            for k, v in values.items():
                setattr(row, k, v)
            row.described_at = utcnow()
            report["changed"].append(pid)
        else:
            report["unchanged"].append(pid)
        if d.status != "ok":
            report["failed"].append(pid)
    return {k: sorted(v) for k, v in report.items()}
