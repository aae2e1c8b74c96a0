"""Property: history is complete. Random sequences of create/update/delete/restore/revert on a
small nested dataset; after every step, replaying the audit entries from empty reproduces every
record exactly (values, parent, deleted or not), and restore-all after deleting everything
brings every record back.

The state machine keeps its own model of the records (values, parent, deleted, and which delete
took each deleted record away), so it knows the one status every request must get: a restore or
revert the rules allow must succeed, and 409/422 are accepted only where the model predicts
that refusal. After every step the model must equal the database."""
from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test
from sqlalchemy import select

from benchbook.persistence.tables import Record
from tests.conftest import empty_tables

NAMES = st.sampled_from(["alpha", "beta", "gamma", None])
NUMBERS = st.one_of(st.none(), st.integers(-5, 5))
# + 0.0: no negative zero, which JSON text keeps and PostgreSQL's jsonb does not
VALUES = st.one_of(st.none(), st.floats(-10, 10, allow_nan=False).map(lambda v: round(v, 2) + 0.0))


def replay(api: Any) -> dict[str, dict[str, Any]]:
    """Rebuild every record from history alone: {id: {data, parent, deleted}}."""
    entries: list[dict[str, Any]] = []
    offset = 0
    while True:
        page = api.ok("GET", "/audit", params={"entity_type": "record", "sort": "timestamp:asc", "limit": 500,
                                              "offset": offset})
        entries += page["items"]
        offset += 500
        if offset >= page["total"]:
            break
    state: dict[str, dict[str, Any]] = {}
    for e in entries:
        rid = e["entity_id"]
        if e["action"] == "create":
            new = e["new_data"]
            state[rid] = {"data": dict(new["data"]), "parent": new["parent_record_id"], "deleted": False}
        elif e["action"] == "update":
            rec = state[rid]
            for key, value in e["new_data"]["data"].items():
                if value is None:
                    rec["data"].pop(key, None)
                else:
                    rec["data"][key] = value
            if any(c["field"] == "parent_record_id" for c in e["changes"]):
                rec["parent"] = e["new_data"]["parent_record_id"]
        elif e["action"] == "delete":
            state[rid]["deleted"] = True
        elif e["action"] == "restore":
            state[rid]["deleted"] = False
        elif e["action"] == "purge":
            state.pop(rid)
    return state


def database(api: Any) -> dict[str, dict[str, Any]]:
    with api.app.services.db.session() as s:
        return {r.id: {"data": dict(r.data), "parent": r.parent_id, "deleted": r.deleted_at is not None}
                for r in s.scalars(select(Record))}


def same(a: Any, b: Any) -> bool:
    """Equal as JSON (how the service compares values when it plans a revert)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


class Model:
    """What the records must be: ``{id: {schema, data (by field id), parent, deleted, op}}``;
    ``op`` names the delete that took a deleted record away (records deleted together share it)."""

    def __init__(self) -> None:
        self.records: dict[str, dict[str, Any]] = {}
        self.ops = itertools.count()

    def add(self, rid: str, schema: str, data: dict[str, Any], parent: str | None) -> None:
        self.records[rid] = {"schema": schema, "data": {k: v for k, v in data.items() if v is not None},
                             "parent": parent, "deleted": False, "op": None}

    def live(self, rid: str) -> bool:
        return not self.records[rid]["deleted"]

    def children(self, rid: str) -> list[str]:
        return [k for k, r in self.records.items() if r["parent"] == rid]

    def live_below(self, rid: str) -> list[str]:
        out: list[str] = []
        for kid in self.children(rid):
            if self.live(kid):
                out += [kid, *self.live_below(kid)]
        return out

    def deleted_above(self, rid: str) -> list[str]:
        out = []
        parent = self.records[rid]["parent"]
        while parent is not None:
            if not self.live(parent):
                out.append(parent)
            parent = self.records[parent]["parent"]
        return out

    def deleted_with(self, rid: str) -> list[str]:
        """``rid`` and the records below it taken away by the same delete."""
        op = self.records[rid]["op"]
        out, frontier = [rid], [rid]
        while frontier:
            frontier = [k for f in frontier for k in self.children(f)
                        if not self.live(k) and self.records[k]["op"] == op]
            out += frontier
        return out

    def delete(self, rids: list[str]) -> None:
        op = next(self.ops)
        for rid in rids:
            self.records[rid].update(deleted=True, op=op)

    def restore(self, rids: list[str]) -> None:
        for rid in rids:
            self.records[rid].update(deleted=False, op=None)

    def set_data(self, rid: str, values: dict[str, Any]) -> None:
        data = self.records[rid]["data"]
        for key, value in values.items():
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value

    def view(self) -> dict[str, dict[str, Any]]:
        """As :func:`database` shows the records."""
        return {rid: {"data": r["data"], "parent": r["parent"], "deleted": r["deleted"]}
                for rid, r in self.records.items()}


@pytest.mark.property  # README's command leaves it out; .ci/run runs it with the deep profile
def test_history_replays_to_the_live_data(api):
    class History(RuleBasedStateMachine):
        @initialize()
        def setup(self) -> None:
            empty_tables(api)
            site = api.ok("POST", "/schemas", 201, json={"name": "site", "fields": [
                {"name": "name", "type": "string"}, {"name": "n", "type": "integer"}]})
            obs = api.ok("POST", "/schemas", 201, json={"name": "obs", "parent": "site", "fields": [
                {"name": "v", "type": "float"}, {"name": "note", "type": "string"}]})
            api.ok("POST", "/collections", 201, json={"name": "c", "schemas": ["site", "obs"]})
            self.field_id = {f["name"]: f["id"] for f in site["fields"] + obs["fields"]}
            self.model = Model()

        def _by_id(self, values: dict[str, Any]) -> dict[str, Any]:
            return {self.field_id[k]: v for k, v in values.items()}

        def _ids(self) -> list[str]:
            return list(self.model.records)

        def _pick(self, data: st.DataObject, deleted: bool) -> str:
            """Any record, or (half the time, when there are some) one whose ``deleted`` is as asked."""
            some = [i for i in self._ids() if self.model.live(i) != deleted]
            return data.draw(st.sampled_from(some if some and data.draw(st.booleans()) else self._ids()))

        @rule(name=NAMES, n=NUMBERS)
        def create_site(self, name: Any, n: Any) -> None:
            values = {"name": name, "n": n}
            rec = api.ok("POST", "/collections/c/records", 201, json={"schema_name": "site", "data": values})
            self.model.add(rec["id"], "site", self._by_id(values), None)

        @rule(data=st.data(), v=VALUES)
        def create_obs(self, data: st.DataObject, v: Any) -> None:
            live = [i for i, r in self.model.records.items() if r["schema"] == "site" and self.model.live(i)]
            if not live:
                return
            parent = data.draw(st.sampled_from(live))
            rec = api.ok("POST", "/collections/c/records", 201,
                         json={"schema_name": "obs", "parent_record_id": parent, "data": {"v": v}})
            self.model.add(rec["id"], "obs", self._by_id({"v": v}), parent)

        @rule(data=st.data(), name=NAMES, n=NUMBERS, v=VALUES, note=NAMES)
        def update(self, data: st.DataObject, name: Any, n: Any, v: Any, note: Any) -> None:
            if not self._ids():
                return
            rid = data.draw(st.sampled_from(self._ids()))
            site = self.model.records[rid]["schema"] == "site"
            values = {"name": name, "n": n} if site else {"v": v, "note": note}
            r = api.patch(f"/records/{rid}", json={"data": values})
            expected = 200 if self.model.live(rid) else 404  # 404: the record is deleted
            assert r.status_code == expected, r.text
            if expected == 200:
                self.model.set_data(rid, self._by_id(values))

        @rule(data=st.data())
        def delete(self, data: st.DataObject) -> None:
            if not self._ids():
                return
            rid = self._pick(data, deleted=False)
            r = api.delete(f"/records/{rid}", params={"force": "true"})
            live = self.model.live(rid)
            assert r.status_code == (204 if live else 404), r.text
            if live:
                self.model.delete([rid, *self.model.live_below(rid)])

        @rule(data=st.data())
        def delete_a_child_then_its_parent(self, data: st.DataObject) -> None:
            """Two deletes: the child's own, then the parent's (the child must not come back with it)."""
            live = [i for i, r in self.model.records.items() if r["parent"] and self.model.live(i)]
            if not live:
                return
            rid = data.draw(st.sampled_from(live))
            parent = self.model.records[rid]["parent"]
            api.ok("DELETE", f"/records/{rid}", 204)
            self.model.delete([rid])
            api.ok("DELETE", f"/records/{parent}", 204, params={"force": "true"})
            self.model.delete([parent, *self.model.live_below(parent)])

        @rule(data=st.data())
        def restore(self, data: st.DataObject) -> None:
            if not self._ids():
                return
            rid = self._pick(data, deleted=True)
            r = api.post(f"/records/{rid}/restore", params={"with_parents": "true"})
            if self.model.live(rid):
                assert r.status_code == 409, r.text  # not deleted (409 for every kind: docs/decisions.md)
                return
            # no uniqueness keys here, and with_parents lifts a deleted parent: it must come back
            assert r.status_code == 200, r.text
            assert r.json()["id"] == rid and r.json()["deleted_at"] is None
            self.model.restore([*self.model.deleted_above(rid), *self.model.deleted_with(rid)])

        def _predict_revert(self, entry: dict[str, Any], force: bool) -> tuple[int, Any]:
            """The status reverting ``entry`` must get, and what it then does to the model."""
            rid, model = entry["entity_id"], self.model
            live = model.live(rid)
            if entry["action"] == "update":
                if not live:
                    return 422, None  # restore it first
                back: dict[str, Any] = {}
                conflicts: dict[str, Any] = {}
                for change in entry["changes"]:
                    current = model.records[rid]["data"].get(change["field"])
                    if same(current, change["before"]):
                        continue  # unchanged
                    (back if same(current, change["after"]) else conflicts)[change["field"]] = change["before"]
                if not back and not conflicts:
                    return 422, None  # nothing to put back
                chosen = {**back, **conflicts} if force else back
                if not chosen:
                    return 409, None  # every field edited since, no force
                return 200, lambda: model.set_data(rid, chosen)
            if entry["action"] in ("create", "restore"):  # undone by deleting
                if not live:
                    return 422, None  # already deleted
                below = model.live_below(rid)
                if below and not force:
                    return 409, None  # live children need force
                return 200, lambda: model.delete([rid, *below])
            if entry["action"] == "delete":  # undone by restoring, without lifting parents
                if live or model.deleted_above(rid):
                    return 422, None  # live already, or blocked by a deleted parent
                return 200, lambda: model.restore(model.deleted_with(rid))
            raise AssertionError(f"unexpected entry {entry}")

        @rule(data=st.data(), force=st.booleans())
        def revert(self, data: st.DataObject, force: bool) -> None:
            entries = api.ok("GET", "/audit", params={"entity_type": "record", "limit": 100})["items"]
            if not entries:
                return
            # first which kind of entry and outcome to try (among those some entry would get now),
            # then an entry: refusals and successes of every kind come up, not only the common ones
            by_outcome: dict[tuple[str, int], list[dict[str, Any]]] = {}
            for entry in entries:
                by_outcome.setdefault((entry["action"], self._predict_revert(entry, force)[0]), []).append(entry)
            entry = data.draw(st.sampled_from(by_outcome[data.draw(st.sampled_from(sorted(by_outcome)))]))
            expected, effect = self._predict_revert(entry, force)
            r = api.post(f"/audit/{entry['id']}/revert", json={"force": force})
            assert r.status_code == expected, f"revert of {entry['action']} (force={force}): {r.status_code} {r.text}"
            if effect is not None:
                effect()

        @rule()
        def delete_everything_then_restore_all(self) -> None:
            api.ok("DELETE", "/collections/c/records", params={"force": "true"})
            result = api.ok("POST", "/audit/restore-all", json={})
            assert result["blocked"] == 0
            assert all(not r["deleted"] for r in database(api).values())
            self.model.restore(self._ids())

        @invariant()
        def model_is_the_database(self) -> None:
            assert database(api) == self.model.view()

        @invariant()
        def history_replays(self) -> None:
            assert replay(api) == database(api)

    run_state_machine_as_test(History, settings=settings(
        max_examples=settings.default.max_examples * 12 // 100, stateful_step_count=30, deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]))
