"""The package's shape holds: no import cycle between any two modules of ``src/benchbook``,
and imports run one way only (the import-linter contracts in ``pyproject.toml``: entry points
over handlers over the domain over persistence; the domain never imports what serves
requests; handlers never import persistence). See ``docs/architecture.md``."""
from __future__ import annotations

import graphlib
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

from tests.waiting import HANG

ROOT = Path(__file__).resolve().parents[1]


def module_cycle(graph: grimp.ImportGraph) -> list[str] | None:
    """One cycle of direct imports between modules of ``benchbook`` (function-level imports
    count; imports under ``TYPE_CHECKING`` do not), or None."""
    deps = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules if m.startswith("benchbook")}
    try:
        graphlib.TopologicalSorter(deps).prepare()
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return None


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("benchbook", exclude_type_checking_imports=True)


def test_no_module_of_the_package_imports_itself_through_others(graph: grimp.ImportGraph) -> None:
    cycle = module_cycle(graph)
    assert cycle is None, "import cycle: " + " → ".join(cycle or [])


def test_the_cycle_check_finds_a_cycle_that_is_there() -> None:
    graph = grimp.build_graph("benchbook", exclude_type_checking_imports=True)
    graph.add_import(importer="benchbook.domain.ids", imported="benchbook.domain.records.writes")
    cycle = module_cycle(graph)
    assert cycle is not None and "benchbook.domain.ids" in cycle and "benchbook.domain.records.writes" in cycle


def test_imports_keep_the_contracts_of_pyproject() -> None:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert exe, "import-linter is not installed (it is in the test extra)"
    done = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=HANG, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "broken" in done.stdout and "0 broken" in done.stdout


def test_each_package_s_exceptions_have_one_root() -> None:
    """Issue 39 item 4: every exception class defined in a package derives from that package's
    one root (httpx's ``_exceptions.py`` as the model), and every kind of domain error has the
    HTTP status the edge gives it."""
    import importlib
    import inspect
    import pkgutil

    from connexion.exceptions import ProblemException

    import benchbook
    from benchbook.domain.errors import BenchbookError
    from benchbook.http.envelope import STATUS
    from benchbook.maintenance import MaintenanceError
    from benchbook.persistence.db import DatabaseBusy
    from benchbook.plugin.errors import SDKError
    from benchbook.runner.errors import RunnerError

    # the HTTP edge raises domain errors, and Connexion's own for what Connexion's handlers answer
    roots: dict[str, tuple[type[BaseException], ...]] = {
        "benchbook.domain": (BenchbookError,), "benchbook.http": (BenchbookError, ProblemException),
        "benchbook.runner": (RunnerError,), "benchbook.persistence": (DatabaseBusy,),
        "benchbook.maintenance": (MaintenanceError,), "benchbook.plugin": (SDKError,)}
    seen = 0
    for info in pkgutil.walk_packages(benchbook.__path__, "benchbook."):
        if ".migrations" in info.name or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        root = next((r for prefix, r in roots.items() if info.name.startswith(prefix)), None)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != info.name or not issubclass(cls, BaseException):
                continue
            seen += 1
            assert root is not None, f"{info.name}.{cls.__name__}: exceptions of this package have no root"
            assert issubclass(cls, root), f"{info.name}.{cls.__name__} does not derive from {root}"
            if issubclass(cls, BenchbookError):
                assert cls.kind in STATUS, f"{cls.__name__}.kind {cls.kind!r} has no HTTP status"
    assert seen >= 15
