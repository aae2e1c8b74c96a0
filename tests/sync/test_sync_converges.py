"""After any mix of offline edits, creates, deletes and moves on two devices and at the
authority, synced over a transport that refuses requests and loses replies, one last round of
syncs brings every device to the authority's state, except what an open row holds back
(issue 34: the Hypothesis state machine of *Proof*)."""
from __future__ import annotations

from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test
from sqlalchemy import select
from sqlalchemy.engine import make_url

from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.schemas import create_schema
from benchbook.domain.context import Ctx
from benchbook.domain.errors import BenchbookError
from benchbook.domain.records import writes
from benchbook.domain.sync import conflicts, devices
from benchbook.persistence.db import Database, open_database
from benchbook.persistence.tables import Record
from benchbook.remote import syncing
from benchbook.settings.config import Project
from tests.conftest import migrated_copy
from tests.live_server import served_in_thread

SITES = ("north", "south")
VALUES = st.sampled_from(["a", "b", "c", None])


class Flaky(httpx.BaseTransport):
    """Real HTTP, except request number ``at`` (counted from 0): refused before it is sent
    (``lose`` false) or answered and then lost (``lose`` true)."""

    def __init__(self, at: int | None, lose: bool) -> None:
        self.inner, self.at, self.lose, self.n = httpx.HTTPTransport(), at, lose, 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        n, self.n = self.n, self.n + 1
        if n == self.at and not self.lose:
            raise httpx.ConnectError("refused", request=request)
        response = self.inner.handle_request(request)
        if n == self.at:
            response.read()
            response.close()
            raise httpx.ReadError("reply lost", request=request)
        return response

    def close(self) -> None:
        self.inner.close()


class Side:
    """A project opened in this process (its database and folder)."""

    def __init__(self, root: Path) -> None:
        self.project = Project.open(root)
        self.db: Database = open_database(self.project.database_url)

    @contextmanager
    def write(self) -> Any:
        with self.db.session() as s, s.begin():
            self.db.write_lock(s)
            yield Ctx(session=s, actor=self.project.root.name, files_dir=self.project.files_dir)

    def state(self, skip: set[str] = frozenset()) -> dict[str, Any]:
        with self.db.session() as s:
            return {r.id: (r.data, r.parent_id, r.deleted_at is not None)
                    for r in s.scalars(select(Record)) if r.id not in skip}

    def records(self) -> list[Record]:
        with self.db.session() as s:
            return list(s.scalars(select(Record).order_by(Record.id)))


def _new(tmp: Path, request: pytest.FixtureRequest, name: str) -> Path:
    project = Project.init(tmp / name)
    migrated_copy(request, Path(str(make_url(project.database_url).database)))
    return project.root


@pytest.mark.parametrize("share", [5])
def test_two_devices_over_a_flaky_transport_converge_on_the_authority(request, tmp_path_factory, share):
    counter = iter(range(10**6))

    class Converges(RuleBasedStateMachine):
        @initialize()
        def lab(self) -> None:
            tmp = tmp_path_factory.mktemp(f"lab{next(counter)}")
            self.stack = ExitStack()
            root = _new(tmp, request, "authority")
            url = self.stack.enter_context(served_in_thread(root))
            self.authority = Side(root)
            with self.authority.write() as ctx:
                create_schema(ctx, {"name": "site", "fields": [{"name": "label", "type": "string"}]})
                create_schema(ctx, {"name": "sample", "parent": "site", "fields": [
                    {"name": "code", "type": "string"}, {"name": "note", "type": "string"}]})
                create_collection(ctx, {"name": "lake", "schemas": ["site", "sample"]})
                self.sites = [writes.create_record(ctx, "lake", {"schema_name": "site", "data": {"label": n}}).id
                              for n in SITES]
                writes.create_record(ctx, "lake", {"schema_name": "sample", "parent_record_id": self.sites[0],
                                                   "data": {"code": "s0"}})
            self.devices = []
            for name in ("laptop", "field"):
                with self.authority.write() as ctx:
                    invite = devices.invite(ctx.session, name)["invite"]
                side = Side(_new(tmp, request, name))
                syncing.connect(side.db, side.project, url, invite)
                self.devices.append(side)
            self.everyone = [self.authority, *self.devices]

        def teardown(self) -> None:
            if not hasattr(self, "stack"):
                return
            try:
                for _ in range(2):  # a round, then one more: what one device sent reaches the other
                    for side in self.devices:
                        syncing.sync(side.db, side.project)
                for side in self.devices:
                    with side.db.session() as s:
                        held = {r["entity_id"] for r in conflicts.list_rows(s)}
                    assert side.state(skip=held) == self.authority.state(skip=held), side.project.root.name
            finally:
                for side in self.everyone:
                    side.db.engine.dispose()
                self.stack.close()

        def _pick(self, data: st.DataObject, side: Side, schema: str | None = None) -> Record | None:
            with side.db.session() as s:
                live = [r for r in s.scalars(select(Record).where(Record.deleted_at.is_(None)).order_by(Record.id))
                        if schema is None or (r.parent_id is not None) == (schema == "sample")]
            return data.draw(st.sampled_from(live)) if live else None

        def _do(self, side: Side, change: Any) -> None:
            try:
                with side.write() as ctx:
                    change(ctx)
            except BenchbookError:
                pass  # refused here, as the API would refuse it: nothing changed

        @rule(data=st.data(), who=st.integers(0, 2), field=st.sampled_from(["code", "note"]), value=VALUES)
        def edit(self, data: st.DataObject, who: int, field: str, value: Any) -> None:
            side = self.everyone[who]
            rec = self._pick(data, side, "sample")
            if rec is not None:
                self._do(side, lambda ctx: writes.update_record(ctx, rec.id, {"data": {field: value}}))

        @rule(data=st.data(), who=st.integers(0, 2), code=VALUES)
        def create(self, data: st.DataObject, who: int, code: Any) -> None:
            side = self.everyone[who]
            parent = data.draw(st.sampled_from(self.sites))
            self._do(side, lambda ctx: writes.create_record(
                ctx, "lake", {"schema_name": "sample", "parent_record_id": parent, "data": {"code": code}}))

        @rule(data=st.data(), who=st.integers(0, 2))
        def delete(self, data: st.DataObject, who: int) -> None:
            side = self.everyone[who]
            rec = self._pick(data, side, "sample")
            if rec is not None:
                self._do(side, lambda ctx: writes.delete_records(ctx, [ctx.session.get(Record, rec.id)], force=True))

        @rule(data=st.data(), who=st.integers(0, 2))
        def move(self, data: st.DataObject, who: int) -> None:
            side = self.everyone[who]
            rec = self._pick(data, side, "sample")
            parent = data.draw(st.sampled_from(self.sites))
            if rec is not None:
                self._do(side, lambda ctx: writes.update_record(ctx, rec.id, {"parent_record_id": parent}))

        @rule(who=st.integers(0, 1), at=st.none() | st.integers(0, 8), lose=st.booleans())
        def sync(self, who: int, at: int | None, lose: bool) -> None:
            side = self.devices[who]
            try:
                syncing.sync(side.db, side.project, transport=Flaky(at, lose))
            except BenchbookError as exc:
                assert exc.kind == "bad_gateway", exc.detail  # only the transport's failures

        @invariant()
        def nothing_is_lost_on_a_device(self) -> None:
            for side in getattr(self, "devices", []):
                with side.db.session() as s:
                    assert s.scalar(select(Record.id).limit(1)) is not None

    run_state_machine_as_test(Converges, settings=settings(
        max_examples=settings.default.max_examples * share // 100, stateful_step_count=25, deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]))
