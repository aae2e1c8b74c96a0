"""Property-based fuzzing of every operation in the OpenAPI document (schemathesis).

The real app runs in-process over ASGI on a fresh temporary SQLite project. schemathesis
generates valid and invalid requests for each operation and runs ALL its checks on every
response: no 500s, status codes / content types / headers / bodies as documented, valid
input accepted, invalid input rejected with a 4xx, Allow headers on 405s, and so on.
Response validation is schemathesis's own: ``BENCHBOOK_VALIDATE_RESPONSES`` is not needed.

A little data (a schema with a field, a collection, a record, a file, an import) is seeded so
that about half of the valid cases of path-parameter operations hit something that exists
instead of a 404; destructive cases may delete or rename it, so it is re-created on demand.

Every check counts, positive-data acceptance too: a request the document calls valid must be
accepted, or refused with a status that does not blame its form (404: its URL names something
that does not exist; 409: its body does, or it clashes with what is stored). What the document can only describe (a
filter tree's fields, a record's ``data``, a field type's restrictions, a workflow's YAML, an
imported file) is made valid in each valid case just before it is sent (``valid.py``).

Then the stateful phase (:func:`test_stateful_scenarios`): sequences of calls that feed each response into
the next request along the document's ``links`` (a created collection to its records, a created
record to its read, edit, delete and history) and the links schemathesis infers from response
schemas and path parameters, every check run on every step.

Filter parameters are documented as JSON text (``format: json``): their valid values are drawn
from :data:`FILTER_TEXT`, JSON filter trees, whose leaves ``valid.py`` then gives the fields of
the operation's kind (records, history, runs). Everything is derandomized (the ``ci`` hypothesis
profile, tests/conftest.py) so a CI failure reproduces locally.
"""
from __future__ import annotations

import atexit
import json
import shutil
import socket
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.errors import Flaky
from schemathesis.core import NOT_SET
from schemathesis.core.failures import FailureGroup, ServerError
from schemathesis.core.parameters import ParameterLocation
from schemathesis.openapi.checks import RejectedPositiveData, UseAfterFree
from starlette.testclient import TestClient

from benchbook.domain.ai import config as ai_config
from benchbook.http.app import create_app, load_document
from benchbook.settings.config import Project, write_paused
from tests.fuzz import valid

# One app and its data serve every test of the module: it runs on one xdist worker, in order
# (--dist loadscope, pyproject.toml), so what a case meets never depends on how tests were shared.
pytestmark = pytest.mark.fuzz

# The Host guard only answers requests addressed to this computer (never loosened for tests).
LOCAL = {"host": "127.0.0.1"}

_ROOT = Path(tempfile.mkdtemp(prefix="benchbook-fuzz-"))
atexit.register(shutil.rmtree, _ROOT, ignore_errors=True)  # also when the module is only collected
APP = create_app(Project.init(_ROOT / "project"))
schema = schemathesis.openapi.from_asgi("/openapi.json", APP, headers=LOCAL)

SCHEMA, FIELD, COLLECTION = "fuzz_site", "label", "fuzz_lab"

_SCALAR = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=6)
_LEAF = st.fixed_dictionaries(
    # the seeded record field, history filter fields, run filter fields (GET .../filter-fields)
    {"field": st.sampled_from([FIELD, "action", "collection", "schema", "timestamp", "status", "trigger"]),
     "op": st.sampled_from(["eq", "ne", "gt", "gte", "lt", "lte", "contains", "in", "is_null"])},
    optional={"value": _SCALAR | st.lists(_SCALAR, max_size=3)})
#: What a ``format: json`` filter parameter holds: the text of a filter tree (a leaf, or an
#: ``and``/``or`` group of nodes), as the document describes it.
FILTER_TEXT = st.recursive(
    _LEAF, lambda nodes: st.dictionaries(st.sampled_from(["and", "or"]), st.lists(nodes, max_size=3),
                                          min_size=1, max_size=1),
    max_leaves=4).map(json.dumps)
schemathesis.openapi.format("json", FILTER_TEXT)
schemathesis.openapi.format("iana-timezone", st.sampled_from(valid.ZONES))


class _Seed:
    """The seeded things, re-made only after a request that may have changed them."""

    client: TestClient | None = None
    known: dict[str, str] | None = None
    valid: valid.Seeded | None = None  # what valid.make_valid draws from
    imported: tuple[str, str] | None = None  # an import batch that has something to undo, its record


def _import(c: TestClient) -> tuple[str, str]:
    """``(batch id, record id)`` of an import that can be undone: its record still live."""
    api = "/api"
    if _Seed.imported is not None:
        record = c.get(f"{api}/records/{_Seed.imported[1]}")
        if record.status_code == 200 and record.json().get("deleted_at") is None:
            return _Seed.imported
    batch = c.post(f"{api}/collections/{COLLECTION}/import", data={"schema": SCHEMA},
                   files={"file": ("seed.csv", f"{FIELD}\nimported\n".encode(), "text/csv")}).json()["batch_id"]
    entries = c.get(f"{api}/audit/batches/{batch}/entries").json()["items"]
    _Seed.imported = (batch, entries[0]["entity_id"])
    return _Seed.imported


def _make_seed(c: TestClient) -> dict[str, str]:
    """Make sure the seeded things exist and are live; their values by path-parameter name."""
    api = "/api"
    if c.get(f"{api}/schemas/{SCHEMA}").status_code != 200:
        c.post(f"{api}/schemas/{SCHEMA}/restore")
    if c.get(f"{api}/schemas/{SCHEMA}").status_code != 200:
        c.delete(f"{api}/schemas/{SCHEMA}/purge")
        c.post(f"{api}/schemas", json={"name": SCHEMA, "fields": [{"name": FIELD, "type": "string"}]})
    if c.get(f"{api}/schemas/{SCHEMA}/fields/{FIELD}").status_code != 200:
        c.post(f"{api}/schemas/{SCHEMA}/fields/{FIELD}/restore")
    if c.get(f"{api}/schemas/{SCHEMA}/fields/{FIELD}").status_code != 200:
        c.post(f"{api}/schemas/{SCHEMA}/fields", json={"name": FIELD, "type": "string"})
    if c.get(f"{api}/collections/{COLLECTION}").status_code != 200:
        c.post(f"{api}/collections/{COLLECTION}/restore")
    if c.get(f"{api}/collections/{COLLECTION}").status_code != 200:
        c.delete(f"{api}/collections/{COLLECTION}/purge")
        c.post(f"{api}/collections", json={"name": COLLECTION, "schemas": [SCHEMA]})
    c.patch(f"{api}/collections/{COLLECTION}", json={"schemas": [SCHEMA]})
    for f in c.get(f"{api}/schemas/{SCHEMA}").json()["fields"]:  # valid record data holds FIELD only
        if f["name"] != FIELD and f["required"]:
            c.patch(f"{api}/schemas/{SCHEMA}/fields/{f['id']}", json={"required": False})
    records = c.get(f"{api}/collections/{COLLECTION}/records", params={"limit": 1}).json().get("items") or []
    if not records:
        records = [c.post(f"{api}/collections/{COLLECTION}/records",
                          json={"schema_name": SCHEMA, "data": {FIELD: "north"}}).json()]
    file = c.post(f"{api}/files", files={"file": ("seed.txt", b"seeded content\n", "text/plain")}).json()
    entries = c.get(f"{api}/audit", params={"limit": 1}).json()["items"]
    batch, _ = _import(c)
    known = {"name": SCHEMA, "field": FIELD, "name_or_id": COLLECTION, "dataset_name": COLLECTION,
             "collection_name": COLLECTION, "sha256": file["sha256"], "batch_id": batch}
    if records and "id" in records[0]:
        known["record_id"] = records[0]["id"]
    if entries:
        known["audit_id"] = entries[0]["id"]
    return known


def seed() -> dict[str, str]:
    if _Seed.known is None:
        assert _Seed.client is not None
        _Seed.known = _make_seed(_Seed.client)
    return _Seed.known


def _vocabularies(c: TestClient) -> valid.Seeded:
    """The filter vocabularies, as the server describes them: the seeded field's type's operators
    (``GET /schemas/field-types``), the history's and the runs' fields."""
    c.post("/api/plugins/refresh")  # the built-ins described, for the workflows valid.py writes
    types = {t["name"]: t for t in c.get("/api/schemas/field-types").json()}
    return valid.Seeded(
        schema=SCHEMA, field=FIELD,
        records={FIELD: {"type": "string", "operators": types["string"]["operators"], "choices": None}},
        history={f["name"]: f for f in c.get("/api/audit/filter-fields").json()},
        runs={f["name"]: f for f in c.get("/api/jobs/filter-fields").json()})


@pytest.fixture(scope="module", autouse=True)
def _project() -> Iterator[None]:
    with TestClient(APP, base_url="http://127.0.0.1", raise_server_exceptions=False) as client, \
            _no_outside_ai():
        _Seed.client = client
        seed()
        _Seed.valid = _vocabularies(client)
        yield
        _Seed.client = _Seed.valid = None
    APP.services.db.engine.dispose()


@contextmanager
def _no_outside_ai() -> Iterator[None]:
    """The AI operations reach nothing outside this computer: the model router and the default
    provider address are a loopback port nothing listens on (generated settings still point
    wherever they say; the local model server's default is on loopback already)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        nowhere = f"http://127.0.0.1:{s.getsockname()[1]}"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BENCHBOOK_ROUTER_URL", nowhere)
        patch.setattr(ai_config, "DEFAULT_OPENAI", f"{nowhere}/v1")
        yield


def _static_words() -> dict[tuple[str, str], set[str]]:
    """For each path parameter, the words of the static paths beside it: ``/jobs/{job_id}`` has
    ``count``, ``filter-fields``, … (``GET /jobs/filter-fields`` exists). A request whose
    parameter is one of them reaches that other path, which the router tries first; OpenAPI
    cannot say so (a ``not: enum`` makes schemathesis expect a refusal the router never gives)."""
    paths = [p.strip("/").split("/") for p in load_document()["paths"]]
    words: dict[tuple[str, str], set[str]] = {}
    for segs in paths:
        for i, seg in enumerate(segs):
            if seg.startswith("{"):
                words.setdefault(("/".join(segs[:i]), seg[1:-1]), set()).update(
                    t[i] for t in paths if len(t) > i and t[:i] == segs[:i] and not t[i].startswith("{"))
    return words


STATIC_WORDS = _static_words()


def _not_a_sibling(case: schemathesis.Case[Any]) -> None:
    """A path parameter generated as one of :data:`STATIC_WORDS`, or empty (``GET /jobs/`` is
    ``GET /jobs``: a stateful link can carry an empty value), gets a suffix, so the request stays
    the case's own operation (any case: the collision is a routing fact, not a value's)."""
    segs = case.operation.path.strip("/").split("/")
    for i, seg in enumerate(segs):
        name = seg[1:-1] if seg.startswith("{") else None
        if not name or not case.path_parameters or name not in case.path_parameters:
            continue
        value = case.path_parameters[name]
        if value == "" or value in STATIC_WORDS.get(("/".join(segs[:i]), name), ()):
            case.path_parameters[name] = f"{value}-x"


def _make_valid(case: schemathesis.Case[Any]) -> None:
    """What the document only describes, made valid in a valid case (``valid.py``). Done before
    ``call``, so schemathesis does not judge the case again: it cannot judge a multipart body
    holding a file, which it then takes for invalid."""
    assert _Seed.valid is not None
    _not_a_sibling(case)
    valid.make_valid(case, _Seed.valid)
    if case.method.upper() == "POST" and case.path.endswith("/rerun"):
        # a fuzzed POST /automation/stop may have paused automation, and reruns are then refused
        # as invalid (422, spec *Automation switch*): a valid rerun is sent with automation running
        write_paused(APP.services.project.root, False)


def _use_known_values(case: schemathesis.Case[Any]) -> None:
    """For about half of the cases whose path parameters are valid, point them at seeded things.

    The choice is a hash of the generated values, so it is as reproducible as the generation.
    """
    if not case.path_parameters or case.meta is None or case.meta.is_negative_at(ParameterLocation.PATH):
        return
    if zlib.crc32(repr(sorted(case.path_parameters.items())).encode()) % 2:
        return
    known = seed()
    for name in case.path_parameters:
        if name in known:
            case.path_parameters[name] = known[name]


@schema.hook
def after_call(context: Any, case: Any, response: Any) -> None:
    """A write that went through may have deleted, moved or renamed a seeded thing: re-check it
    before it is used again."""
    if case.method.upper() not in ("GET", "HEAD", "OPTIONS") and response.status_code < 400:
        _Seed.known = None


def _outside_failure(case: Any, response: Any) -> bool:
    """A documented 502 of an AI operation: the AI provider or the model router, outside the
    service, cannot be reached or refused (the fuzz project has neither; a generated
    ``base_url`` or key may point anywhere). Such an answer names the address tried."""
    if response.status_code != 502 or not case.operation.path.startswith("/ai/"):
        return False
    try:
        detail = response.json().get("detail")
    except ValueError:
        return False
    return isinstance(detail, str) and " at http" in detail


@schema.hook
def filter_failure(context: Any, failure: Any, case: Any, response: Any) -> bool:
    """Keep every failure except three: an AI operation's 502 when the provider outside the
    service fails (:func:`_outside_failure`), a thing still answering after a soft delete, and a
    "valid" request without the body its operation requires. A valid request refused
    (``positive_data_acceptance``) is kept like any other failure.

    A body-less request: in the stateful phase schemathesis follows links it infers between
    operations (a run's id from ``GET /jobs`` into ``POST /jobs/rerun``'s ``ids``), and when the
    value a link should carry cannot be read from the response it sends the operation with a
    null body, still marked valid; a required body that is null is refused (422) as it must be.

    ``use_after_free`` (stateful phase) expects what a ``DELETE`` deleted to be 404 afterwards.
    benchbook's deletes are soft (spec *Overview* 3): the thing keeps its history, restore plan,
    restore and purge until it is purged. Only a purge (``DELETE .../purge``) must leave nothing,
    so a use after a purge still fails the run.
    """
    if isinstance(failure, UseAfterFree):
        return failure.free.split("?")[0].endswith("/purge")
    if _bodiless(failure, case):
        return False
    if isinstance(failure, ServerError):
        return not _outside_failure(case, response)
    return True


def _bodiless(failure: Any, case: Any) -> bool:
    """Whether ``failure`` is a "valid" request refused for lacking the body its operation
    requires (:func:`filter_failure`)."""
    if not isinstance(failure, RejectedPositiveData) or case.body not in (None, NOT_SET):
        return False
    return bool(((case.operation.definition.raw or {}).get("requestBody") or {}).get("required"))


QUICK = max(1, settings.default.max_examples // 20)
"""Examples per operation in README's test command (profile ``ci``: 5), generated only: every
operation, every check, a few valid and invalid requests each. ``test_fuzz_deep.py`` is the
full run: 40 per operation plus schemathesis's coverage phase (its boundary cases, a dozen to a
hundred per operation, two thirds of the time), which Hypothesis's ``explicit`` phase carries."""
FUZZ_HEALTH = [HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large]


def send_and_check(case: schemathesis.Case[Any]) -> None:
    """Make ``case`` valid where the document cannot say how (:mod:`tests.fuzz.valid`), send it
    and run every check of schemathesis on the answer."""
    _use_known_values(case)
    _make_valid(case)
    # No `checks=`: every built-in check is enabled by default in schemathesis 4, and none is excluded.
    case.call_and_validate(headers=LOCAL)


@schema.parametrize()
@settings(max_examples=QUICK, deadline=None, suppress_health_check=FUZZ_HEALTH,  # profile: tests/conftest.py
          phases=[Phase.generate])  # no coverage phase: see QUICK
def test_every_operation(case: schemathesis.Case[Any]) -> None:
    send_and_check(case)


class _Workflow(schema.as_state_machine()):  # type: ignore[misc]
    """The stateful phase: each scenario chains calls along links, a response's values (a new
    collection's name, a new record's id) becoming the next request's path parameters. Every
    check failure is kept in :attr:`failures` as well as raised."""

    failures: ClassVar[list[FailureGroup]] = []

    def before_call(self, case: schemathesis.Case[Any]) -> None:
        _make_valid(case)

    def get_call_kwargs(self, case: schemathesis.Case[Any]) -> dict[str, Any]:
        return {"headers": LOCAL}

    def validate_response(self, response: Any, case: schemathesis.Case[Any], additional_checks: Any = None,
                          **kwargs: Any) -> None:
        try:
            super().validate_response(response, case, additional_checks=additional_checks, **kwargs)
        except FailureGroup as exc:
            kept = [f for f in exc.exceptions if not _bodiless(f, case)]  # the hook is not asked here
            if not kept:
                return
            self.failures.append(exc)
            raise


def test_stateful_scenarios() -> None:
    """Scenarios of up to 8 steps; their number follows the profile (``ci``: 100 -> 30), as the
    single-call test's examples do. Generation only, no shrinking, as in schemathesis's own
    stateful phase. The database outlives each scenario, so a scenario hypothesis replays meets
    other data and hypothesis may stop the run as "flaky" (schemathesis's runner counts that as
    a pass unless a check failed); here too it fails the test only when a check failed, and
    then with that check's failure."""
    _Workflow.failures = []
    try:
        _Workflow.run(settings=settings(
            settings.default, max_examples=max(1, settings.default.max_examples * 30 // 100),
            stateful_step_count=8, deadline=None, phases=[Phase.generate],
            suppress_health_check=list(HealthCheck)))
    except Flaky:
        if _Workflow.failures:
            raise _Workflow.failures[0] from None
