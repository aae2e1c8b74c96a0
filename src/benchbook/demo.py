"""``benchbook demo``: a project holding the Palmer penguins data (shipped by the
``palmerpenguins`` package): collection ``penguins``; schema ``island`` with child schema
``penguin``; 3 islands and 344 penguins, created through the domain's bulk path so each has history.

It ships one workflow, ``workflows/penguin-tag.yaml`` (:data:`TAG_WORKFLOW`): when a penguin is
created, the built-in ``benchbook.set-fields`` plugin writes its field ``tag`` from its species,
its island (an inherited field) and its study year (``Ade-Tor-2007``). The workflow file is
written before the penguins are created, so their creation queues 344 runs in the same
transaction, as any import would; whoever drains the queue next (the server, or
``benchbook demo --no-serve`` itself) tags them. ``docs/automation.md`` walks through it.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from palmerpenguins import load_penguins

from benchbook.domain import plugin_registry as registry
from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.schemas import create_schema
from benchbook.domain.context import Ctx
from benchbook.domain.history import entries as audit
from benchbook.domain.records.bulk import bulk_create_records
from benchbook.persistence.db import open_database
from benchbook.persistence.tables import Collection
from benchbook.runner import triggers, workflows
from benchbook.runner.plugin_host import discovery
from benchbook.settings.config import Project

ISLAND = {"name": "island", "label": "Island", "description": "An island of the Palmer Archipelago, Antarctica",
          "display_template": "{name}",
          "fields": [{"name": "name", "label": "Name", "type": "string", "required": True}]}
PENGUIN = {
    "name": "penguin", "label": "Penguin", "parent": "island",
    "description": "An adult penguin measured near Palmer Station (Gorman et al. 2014)",
    "display_template": "{species} {sex} {year}",
    "fields": [
        {"name": "species", "label": "Species", "type": "string", "required": True,
         "restrictions": {"choices": ["Adelie", "Chinstrap", "Gentoo"]}},
        {"name": "sex", "label": "Sex", "type": "string", "restrictions": {"choices": ["female", "male"]}},
        {"name": "year", "label": "Study year", "type": "integer", "restrictions": {"min": 2007, "max": 2009}},
        {"name": "bill_length_mm", "label": "Bill length", "type": "float", "restrictions": {"unit": "mm"}},
        {"name": "bill_depth_mm", "label": "Bill depth", "type": "float", "restrictions": {"unit": "mm"}},
        {"name": "flipper_length_mm", "label": "Flipper length (mm)", "type": "integer", "restrictions": {"min": 0}},
        {"name": "body_mass_g", "label": "Body mass (g)", "type": "integer", "restrictions": {"min": 0}},
        {"name": "tag", "label": "Field tag", "type": "string",
         "description": "Written by the penguin-tag workflow when the penguin is created"},
    ],
}
TAG_WORKFLOW = """\
name: penguin-tag
description: >-
  Tags each new penguin with its species, island and study year (Ade-Tor-2007),
  written into its field tag by the built-in set-fields plugin.
record_schema: penguin
triggers:
  record_created: {}
steps:
  - id: tag
    plugin: benchbook.set-fields
    inputs:
      a: record.name          # the island's name: a field the penguin inherits
    config:
      fields:
        tag: "{species:.3}-{inputs.a:.3}-{year}"
"""
COLUMNS = ("species", "sex", "year", "bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g")


def _value(v: Any) -> Any:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return v.item() if hasattr(v, "item") else v


def build_demo(project: Project, progress: Callable[[int], None] | None = None) -> int:
    """Fill ``project`` with the penguins and the ``penguin-tag`` workflow unless its ``penguins``
    collection exists; creating the penguins queues one ``penguin-tag`` run each (unless
    automation is paused). Returns how many records were created (0 when the data was already
    there)."""
    db = open_database(project.database_url)
    try:
        with db.session() as session, session.begin():
            if session.query(Collection.id).filter(Collection.name == "penguins").first():
                return 0
            ctx = Ctx(session=session, actor=project.actor, files_dir=project.files_dir)
            batch = audit.open_batch(ctx, "import", label="palmerpenguins")
            ctx.batch_id = batch.id
            create_schema(ctx, ISLAND)
            create_schema(ctx, PENGUIN)
            if registry.is_empty(session):  # a new project: the built-in plugins are not registered yet
                registry.replace_all(session, discovery.discover(project.root / "plugins"))
            workflows.put(session, project.root, "penguin-tag", TAG_WORKFLOW)
            create_collection(ctx, {"name": "penguins", "schemas": ["island", "penguin"],
                                    "description": "Palmer Archipelago penguins (palmerpenguins package)"})
            frame = load_penguins()
            names = sorted(frame["island"].unique())
            island_ids = bulk_create_records(ctx, "penguins", [{"schema_name": "island", "data": {"name": name}}
                                                               for name in names])
            islands = dict(zip(names, island_ids))
            rows = []
            for row in frame.to_dict(orient="records"):
                data = {k: _value(row[k]) for k in COLUMNS}
                rows.append({"schema_name": "penguin", "parent_record_id": islands[row["island"]],
                             "data": {k: v for k, v in data.items() if v is not None}})
            created = len(islands) + len(bulk_create_records(ctx, "penguins", rows, progress=progress))
            triggers.on_changes(ctx, project.root)
            return created
    finally:
        db.engine.dispose()
