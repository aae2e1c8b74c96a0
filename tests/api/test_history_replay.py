"""Property: history is complete. Random sequences of create/update/delete/restore/revert on a
small nested dataset; after every step, replaying the audit entries from empty reproduces every
record exactly (values, parent, deleted or not), and restore-all after deleting everything
brings every record back."""
from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test
from sqlalchemy import select

from benchbook.persistence.tables import Record
from tests.conftest import empty_tables

NAMES = st.sampled_from(["alpha", "beta", "gamma", None])
NUMBERS = st.one_of(st.none(), st.integers(-5, 5))
VALUES = st.one_of(st.none(), st.floats(-10, 10, allow_nan=False).map(lambda v: round(v, 2)))


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


def test_history_replays_to_the_live_data(api):
    class History(RuleBasedStateMachine):
        @initialize()
        def setup(self) -> None:
            empty_tables(api)
            api.ok("POST", "/schemas", 201, json={"name": "site", "fields": [
                {"name": "name", "type": "string"}, {"name": "n", "type": "integer"}]})
            api.ok("POST", "/schemas", 201, json={"name": "obs", "parent": "site", "fields": [
                {"name": "v", "type": "float"}, {"name": "note", "type": "string"}]})
            api.ok("POST", "/collections", 201, json={"name": "c", "schemas": ["site", "obs"]})
            self.sites: list[str] = []
            self.obs: list[str] = []

        def _ids(self) -> list[str]:
            return self.sites + self.obs

        @rule(name=NAMES, n=NUMBERS)
        def create_site(self, name: Any, n: Any) -> None:
            rec = api.ok("POST", "/collections/c/records", 201,
                         json={"schema_name": "site", "data": {"name": name, "n": n}})
            self.sites.append(rec["id"])

        @rule(data=st.data(), v=VALUES)
        def create_obs(self, data: st.DataObject, v: Any) -> None:
            live = [i for i in self.sites if api.ok("GET", f"/records/{i}")["deleted_at"] is None]
            if not live:
                return
            parent = data.draw(st.sampled_from(live))
            rec = api.ok("POST", "/collections/c/records", 201,
                         json={"schema_name": "obs", "parent_record_id": parent, "data": {"v": v}})
            self.obs.append(rec["id"])

        @rule(data=st.data(), name=NAMES, n=NUMBERS, v=VALUES, note=NAMES)
        def update(self, data: st.DataObject, name: Any, n: Any, v: Any, note: Any) -> None:
            if not self._ids():
                return
            rid = data.draw(st.sampled_from(self._ids()))
            body = {"data": {"name": name, "n": n}} if rid in self.sites else {"data": {"v": v, "note": note}}
            r = api.patch(f"/records/{rid}", json=body)
            assert r.status_code in (200, 404), r.text  # 404: the record is deleted

        @rule(data=st.data())
        def delete(self, data: st.DataObject) -> None:
            if self._ids():
                rid = data.draw(st.sampled_from(self._ids()))
                assert api.delete(f"/records/{rid}", params={"force": "true"}).status_code in (204, 404)

        @rule(data=st.data())
        def restore(self, data: st.DataObject) -> None:
            if self._ids():
                rid = data.draw(st.sampled_from(self._ids()))
                r = api.post(f"/records/{rid}/restore", params={"with_parents": "true"})
                assert r.status_code in (200, 422), r.text  # 422: not deleted

        @rule(data=st.data(), force=st.booleans())
        def revert(self, data: st.DataObject, force: bool) -> None:
            entries = api.ok("GET", "/audit", params={"entity_type": "record", "limit": 20})["items"]
            if entries:
                entry = data.draw(st.sampled_from(entries))
                r = api.post(f"/audit/{entry['id']}/revert", json={"force": force})
                assert r.status_code in (200, 409, 422), r.text

        @rule()
        def delete_everything_then_restore_all(self) -> None:
            api.ok("DELETE", "/collections/c/records", params={"force": "true"})
            result = api.ok("POST", "/audit/restore-all", json={})
            assert result["blocked"] == 0
            assert all(not r["deleted"] for r in database(api).values())

        @invariant()
        def history_replays(self) -> None:
            assert replay(api) == database(api)

    run_state_machine_as_test(History, settings=settings(
        max_examples=12, stateful_step_count=12, deadline=None, derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]))
