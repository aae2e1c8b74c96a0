"""One API operation as a generated command sends it (:class:`Operation`): where each click
parameter goes in the request, and how the CLI spells each HTTP parameter. Shared by the command
builder (:mod:`.generated`), the sender (:mod:`.sending`) and the error text (:mod:`.output`)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class _Null:
    """Marker for a body property given explicitly as JSON ``null``."""

    def __repr__(self) -> str:
        return "null"


NULL = _Null()


@dataclass
class Operation:
    """One API operation as the CLI sends it: where each click parameter goes."""

    operation_id: str
    method: str
    path: str
    path_params: list[tuple[str, str]] = field(default_factory=list)  # (dest, name)
    query: list[tuple[str, str, bool]] = field(default_factory=list)  # (dest, name, is_array)
    body: list[tuple[str, str]] = field(default_factory=list)  # (dest, property)
    json_body: bool = False
    multipart: bool = False
    files: list[tuple[str, str]] = field(default_factory=list)  # (dest, part)
    raw_output: bool = False
    columns_flag: str = "--columns"  # the table's column chooser (--table-columns when the API has columns)
    cli_names: dict[str, str] = field(default_factory=dict)  # "query.x" / "body.x" / "path.x" -> --x / X

    def cli_names_by_http(self) -> dict[str, str]:
        """HTTP parameter name → how the CLI spells it (``{"force": "--force"}``)."""
        return {key.partition(".")[2]: cli for key, cli in self.cli_names.items()}

    def request(self, values: dict[str, Any]) -> dict[str, Any]:
        """``{method, url, params, json?, data?, files?}`` for httpx from the click ``values``
        (keyed by the parameters' dests; ``body_json`` is the parsed ``--body``). ``None`` or an
        empty tuple means "not given" and is not sent; :data:`NULL` is sent as JSON null.
        Never raises for values click has converted.
        """
        from urllib.parse import quote

        url = "/api" + self.path
        for dest, name in self.path_params:
            url = url.replace("{" + name + "}", quote(str(values[dest]), safe=""))
        params: list[tuple[str, Any]] = []
        for dest, name, is_array in self.query:
            value = values.get(dest)
            if is_array:
                params.extend((name, _query_text(v)) for v in value or ())
            elif value is not None:
                params.append((name, _query_text(value)))
        req: dict[str, Any] = {"method": self.method.upper(), "url": url, "params": params}
        body = dict(values.get("body_json") or {})
        for dest, prop in self.body:
            value = values.get(dest)
            if value is not None:
                body[prop] = None if value is NULL else value
        if self.json_body:
            req["json"] = body
        elif self.multipart:
            req["data"] = {k: v if isinstance(v, str) else json.dumps(v) for k, v in body.items()}
            req["files"] = {part: Path(values[dest]) for dest, part in self.files if values.get(dest)}
        return req


def _query_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
