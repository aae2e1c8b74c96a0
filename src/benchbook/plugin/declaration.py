"""The plugin declaration: ``Plugin(...)`` plus the ``@plugin.run`` function."""
from __future__ import annotations

import copy
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match
from jsonschema.validators import validator_for

from benchbook.plugin import runtime
from benchbook.plugin.errors import PluginDefinitionError, PluginError
from benchbook.plugin.isolation import isolate
from benchbook.plugin.wire import schema_problems

if TYPE_CHECKING:
    from benchbook.plugin.context import Context

RunFunction = Callable[["Context", dict[str, Any], dict[str, Any]], Mapping[str, Any]]
"""``def run(ctx, inputs, config) -> dict``: decoded inputs and validated config in, outputs out."""

PortSpec = Mapping[str, Any] | str
USAGE = "usage: python PLUGIN_FILE [describe|run]   (no argument: tier 1 frame loop)"


def _port(spec: PortSpec) -> dict[str, Any]:
    if isinstance(spec, str):
        return {"type": spec, "description": "", "required": False}
    if not isinstance(spec, Mapping):
        raise PluginDefinitionError(f"a port is declared as a dict or a type name, got {spec!r}")
    port: dict[str, Any] = {"description": "", "required": False, **spec}
    ordered: dict[str, Any] = {key: port.pop(key) for key in ("type", "description", "required") if key in port}
    return {**ordered, **port}


class Plugin:
    """A plugin's contract, as sent in its ``describe_result`` frame.

    ::

        plugin = Plugin(
            id="peak-finder", name="Peak finder", description="Finds peaks", category="analysis",
            inputs={"signal": {"type": "table", "description": "x, y", "required": True}},
            outputs={"peaks": {"type": "table"}, "count": "integer"},
            config_schema={"type": "object", "properties": {"height": {"type": "number", "default": 1}}},
            capabilities=["get_context_record", "update_record"],
        )

        @plugin.run
        def run(ctx, inputs, config):
            ...
            return {"peaks": frame, "count": len(frame)}

    A port is ``{"type", "description", "required"}`` (description defaults to ``""``,
    required to ``False``) or just its type name. ``config_schema`` is a JSON Schema (2020-12
    unless its ``$schema`` says otherwise), default ``{"type": "object"}``. Raises
    :class:`PluginDefinitionError` when the declaration is not a valid describe_result or
    ``config_schema`` is not a valid schema.
    """

    def __init__(
        self,
        *,
        id: str,
        name: str,
        description: str = "",
        category: str = "",
        inputs: Mapping[str, PortSpec] | None = None,
        outputs: Mapping[str, PortSpec] | None = None,
        config_schema: Mapping[str, Any] | None = None,
        capabilities: Sequence[str] = (),
    ) -> None:
        self.id = id
        self.name = name
        self.description = description
        self.category = category
        self.inputs = {key: _port(spec) for key, spec in (inputs or {}).items()}
        self.outputs = {key: _port(spec) for key, spec in (outputs or {}).items()}
        self.config_schema: dict[str, Any] = dict(config_schema) if config_schema is not None else {"type": "object"}
        self.capabilities = list(capabilities)
        self.run_function: RunFunction | None = None
        self.batch = False
        problems = schema_problems("describe_result", self.describe())
        if problems:
            raise PluginDefinitionError(f"plugin {id!r} is not a valid describe_result: " + "; ".join(problems))
        validator_class = validator_for(self.config_schema, default=Draft202012Validator)
        try:
            validator_class.check_schema(self.config_schema)
        except SchemaError as exc:
            raise PluginDefinitionError(f"plugin {id!r}: config_schema is not a valid JSON Schema: {exc.message}") from None
        self._config_validator = validator_class(self.config_schema)

    def __repr__(self) -> str:
        return f"Plugin(id={self.id!r}, name={self.name!r})"

    def run(self, function: RunFunction | None = None, /, *, batch: bool = False) -> Any:
        """Decorator registering the run function (returned unchanged): ``@plugin.run``, or
        ``@plugin.run(batch=True)`` for a function that takes many runs at once, as a pandas
        DataFrame with one row per run (:mod:`benchbook.plugin.batches`; the describe result
        then says ``batch: true``). Raises :class:`PluginDefinitionError` when one is already
        registered."""
        def register(fn: RunFunction) -> RunFunction:
            if self.run_function is not None:
                raise PluginDefinitionError(f"plugin {self.id!r} already has a run function")
            self.run_function, self.batch = fn, batch
            return fn
        return register if function is None else register(function)

    def describe(self) -> dict[str, Any]:
        """The ``describe_result`` frame: ``{"type": "describe_result", "id", "name",
        "description", "category", "capabilities", "inputs", "outputs", "config_schema"}``, plus
        ``"batch": true`` for a batch run function (a fresh deep copy each call)."""
        return copy.deepcopy(
            {
                "type": "describe_result",
                "id": self.id,
                "name": self.name,
                "description": self.description,
                "category": self.category,
                "capabilities": self.capabilities,
                "inputs": self.inputs,
                "outputs": self.outputs,
                "config_schema": self.config_schema,
                **({"batch": True} if self.batch else {}),
            }
        )

    def validate_config(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """``config`` checked against ``config_schema``, then with the ``default`` of every
        top-level property it lacks filled in. Raises :class:`PluginError` kind
        ``invalid_config`` listing the violations."""
        errors = list(self._config_validator.iter_errors(config))
        if errors:
            first = best_match(errors)
            rest = [e for e in errors if e is not first][:4]
            detail = "; ".join(f"{e.json_path}: {e.message}" for e in [first, *rest])
            raise PluginError("invalid_config", f"config does not match the config_schema: {detail}")
        filled = dict(config)
        properties = self.config_schema.get("properties")
        if isinstance(properties, Mapping):
            for key, spec in properties.items():
                if key not in filled and isinstance(spec, Mapping) and "default" in spec:
                    filled[key] = copy.deepcopy(spec["default"])
        return filled

    def main(self, argv: Sequence[str] | None = None) -> None:
        """Serve this plugin from a script: ``if __name__ == "__main__": plugin.main()``.

        ``argv`` (default ``sys.argv[1:]``) is empty for the tier 1 frame loop, or ``["describe"]``
        / ``["run"]`` for a tier 2 one-shot. Isolates standard output first — but only from
        here on: whatever the script did while it was imported, before calling ``main()``,
        was not isolated (``python -m benchbook.plugin SCRIPT`` isolates before importing).
        Exits the process with the status of :func:`benchbook.plugin.runtime.serve`, or 2 for
        bad arguments. Does nothing when called while ``python -m benchbook.plugin`` is
        importing the script (that command serves the plugin itself)."""
        if runtime.loading():
            return
        args = list(sys.argv[1:] if argv is None else argv)
        if len(args) > 1 or (args and args[0] not in runtime.MODES):
            sys.stderr.write(USAGE + "\n")
            raise SystemExit(2)
        isolate()
        raise SystemExit(runtime.serve(self, args[0] if args else None))
