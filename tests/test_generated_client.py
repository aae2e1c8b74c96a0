"""The served contract as a client generator sees it (issue 14, item 16; spec *Versioning* 3).

A real ``benchbook serve`` answers ``/openapi.json``; openapi-python-client generates a Python
client from that document, with no warning; the client is imported from a temporary folder and
a researcher's scenario runs through it against the same server: a schema and a collection,
records, a filtered list, a record's history, a delete, the restore-all preview and the restore
(whose body is the nullable union ``RestoreAllRequest`` with its nullable ``filter``).

The document keeps its ``components`` and ``$ref``s, so the client has about one model module
per component schema (the inlined document Connexion serves by itself gave 1,211 modules for 94
components).
"""
from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import patient_http
from tests.live_server import served
from tests.waiting import HANG

PACKAGE = "benchbook_generated_client"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``benchbook serve`` on a free port over a new project; its base URL."""
    project = tmp_path_factory.mktemp("served-project")
    with served(project, project.parent / f"{project.name}.log") as (url, _port):
        yield url


@pytest.fixture(scope="module")
def document(server: str) -> dict[str, Any]:
    served = patient_http.get(f"{server}/openapi.json")
    assert served.status_code == 200 and served.headers["content-type"] == "application/json"
    loaded = served.json()
    assert isinstance(loaded, dict)
    return loaded


@pytest.fixture(scope="module")
def generated(document: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The client generated from the served document: its package folder and what the generator
    printed. No post hooks: formatting the code (ruff) is no part of what is checked here."""
    work = tmp_path_factory.mktemp("client")
    (work / "openapi.json").write_text(json.dumps(document), encoding="utf-8")
    (work / "config.yaml").write_text("post_hooks: []\n", encoding="utf-8")
    out = work / PACKAGE
    done = subprocess.run(
        [sys.executable, "-m", "openapi_python_client", "generate", "--path", str(work / "openapi.json"),
         "--output-path", str(out), "--meta", "none", "--config", str(work / "config.yaml")],
        check=False, capture_output=True, text=True, timeout=HANG, cwd=work)
    printed = done.stdout + done.stderr
    assert done.returncode == 0, printed
    return out, printed


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def test_served_document_keeps_components_and_refs(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    assert len(schemas) > 50
    assert json.dumps(document).count('"$ref"') > len(schemas)
    assert document["servers"] == [{"url": "/api"}]
    restore_all = document["paths"]["/audit/restore-all"]["post"]["requestBody"]["content"]["application/json"]
    assert restore_all["schema"] == {"$ref": "#/components/schemas/RestoreAllRequest"}


def test_generator_prints_no_warning(generated: tuple[Path, str]) -> None:
    out, printed = generated
    lines = [line for line in printed.splitlines() if line.strip()]
    assert lines == [f"Generating {out}"], printed


def test_one_model_module_per_component(generated: tuple[Path, str], document: dict[str, Any]) -> None:
    """Each component schema is one model (a nullable one as its non-null ``_type_0`` part); the
    modules besides are the enums and free-form objects of properties, so the count stays near
    the number of components instead of growing with every place a component is used."""
    out, _ = generated
    modules = {p.stem for p in (out / "models").glob("*.py")} - {"__init__"}
    schemas = document["components"]["schemas"]
    for name, schema in schemas.items():
        if schema.get("type") == "object" and schema.get("properties"):
            expected = _snake(name) + ("_type_0" if schema.get("nullable") else "")
            assert expected in modules, (name, sorted(m for m in modules if m.startswith(_snake(name))))
    assert len(modules) <= 3 * len(schemas), (len(modules), len(schemas))
    assert not [m for m in modules if re.search(r"_response_\d{3}", m)]  # what an inlined response makes


def test_scenario_through_the_generated_client(generated: tuple[Path, str], server: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    out, _ = generated
    monkeypatch.syspath_prepend(str(out.parent))
    try:
        _scenario(server)
    finally:
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def _scenario(server: str) -> None:
    client_mod = importlib.import_module(PACKAGE)
    models = importlib.import_module(f"{PACKAGE}.models")

    def api(tag: str, operation: str) -> Any:
        return importlib.import_module(f"{PACKAGE}.api.{tag}.{tag}_{operation}")

    with client_mod.Client(base_url=f"{server}/api", raise_on_unexpected_status=True) as client:
        schema = api("schemas", "create_schema").sync(client=client, body=models.SchemaCreate(
            name="site", fields=[models.FieldCreate(name="station", type_=models.FieldCreateType.STRING),
                                 models.FieldCreate(name="rain_mm", type_=models.FieldCreateType.FLOAT)]))
        assert isinstance(schema, models.SchemaResponse), schema
        assert [f.name for f in schema.fields] == ["station", "rain_mm"]

        made = api("collections", "create_collection").sync(
            client=client, body=models.DatasetCreate(name="weather", schemas=["site"]))
        assert isinstance(made, models.DatasetResponse), made
        assert made.scope == models.DatasetResponseScope.LOCAL

        create = api("records", "create_record")
        ids = {}
        for station, rain in (("north", 1.5), ("south", 12.0), ("east", 30.25)):
            record = create.sync("weather", client=client, body=models.RecordCreate(
                schema_name="site", data=models.RecordCreateData.from_dict({"station": station, "rain_mm": rain})))
            assert isinstance(record, models.RecordResponse), record
            ids[station] = record.id

        wet = json.dumps({"and": [{"field": "rain_mm", "op": "gt", "value": 10}]})
        page = api("records", "list_records").sync("weather", client=client, schema="site", filter_=wet,
                                                   sort=["rain_mm:desc"])
        assert isinstance(page, models.PaginatedRecordResponse), page
        assert page.total == 2
        assert [r.data["station"] for r in page.items] == ["east", "south"]

        edited = api("records", "update_record").sync(ids["north"], client=client, body=models.RecordUpdate(
            data=models.RecordUpdateData.from_dict({"rain_mm": 2.0})))
        assert isinstance(edited, models.RecordResponse), edited
        history = api("audit", "list_record_audit").sync(ids["north"], client=client)
        assert isinstance(history, models.PaginatedAuditLogResponse), history
        assert [(e.action, e.entity_id) for e in history.items] == [
            (models.AuditLogResponseAction.UPDATE, ids["north"]), (models.AuditLogResponseAction.CREATE, ids["north"])]

        api("records", "delete_record").sync_detailed(ids["south"], client=client)
        only_weather = {"field": "collection", "op": "eq", "value": "weather"}
        plan = api("audit", "restore_all_plan").sync(client=client, filter_=json.dumps(only_weather))
        assert isinstance(plan, models.RestoreAllPlanResponse), plan
        assert (plan.records, plan.restores, plan.blocked) == (1, 1, 0)

        body = models.RestoreAllRequestType0(filter_=models.HistoryFilterTree.from_dict(only_weather))
        done = api("audit", "restore_all").sync(client=client, body=body)
        assert isinstance(done, models.RestoreAllResultResponse), done
        assert done.records == 1
        again = api("records", "get_record").sync(ids["south"], client=client)
        assert isinstance(again, models.RecordResponse) and again.deleted_at is None, again
        nothing = api("audit", "restore_all").sync(client=client, body=models.RestoreAllRequestType0(filter_=None))
        assert isinstance(nothing, models.RestoreAllResultResponse) and nothing.records == 0, nothing
