"""Request validation that reports every problem (spec *Errors* 2).

Connexion's JSON body validator stops at the first error; this one lists one entry per
invalid field as ``{loc, msg, type, input, ctx}``. Undecodable bodies and malformed
multipart forms become 422s instead of 500s.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from connexion.datastructures import MediaTypeDict
from connexion.exceptions import BadRequestProblem
from connexion.utils import is_null, is_nullable
from connexion.validators import VALIDATOR_MAP as CONNEXION_VALIDATORS
from connexion.validators import JSONRequestBodyValidator, MultiPartFormDataValidator, ParameterValidator
from jsonschema import Draft4Validator, ValidationError
from starlette.datastructures import FormData, UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser


class RequestInvalid(BadRequestProblem):  # type: ignore[misc]  # connexion is untyped
    """A request failed validation; ``errors`` lists each problem."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__(detail="Request validation failed")
        self.errors = errors


def error_from(exc: ValidationError) -> dict[str, Any]:
    """One ``{loc, msg, type, input, ctx}`` entry from a jsonschema error."""
    ctx = {"schema": exc.schema} if isinstance(exc.schema, dict) and len(json.dumps(exc.schema)) < 500 else {}
    return {"loc": ["body", *exc.absolute_path], "msg": exc.message, "type": str(exc.validator),
            "input": exc.instance if _small(exc.instance) else None, "ctx": ctx}


def _small(value: Any) -> bool:
    try:
        return len(json.dumps(value)) < 1000
    except (TypeError, ValueError):
        return False


class AllErrorsJSONBodyValidator(JSONRequestBodyValidator):  # type: ignore[misc]  # connexion is untyped
    """JSON body validator that reports every error, and a bad encoding or bad JSON as 422."""

    async def _parse(self, stream: Any, scope: Any) -> Any:
        raw = b"".join([message async for message in stream])
        try:
            text = raw.decode(self._encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            raise RequestInvalid([{"loc": ["body"], "msg": f"body is not valid {self._encoding}: {exc}",
                                   "type": "body_decoding", "input": None, "ctx": {}}]) from None
        if not text:
            return None
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise RequestInvalid([{"loc": ["body", exc.pos], "msg": f"invalid JSON: {exc.msg}",
                                   "type": "json_invalid", "input": None, "ctx": {"error": str(exc)}}]) from None

    def _validate(self, body: Any) -> dict[str, Any] | None:
        if not self._nullable and body is None:
            raise RequestInvalid([{"loc": ["body"], "msg": "a JSON body is required", "type": "missing",
                                   "input": None, "ctx": {}}])
        errors = sorted(self._validator.iter_errors(body), key=lambda e: list(map(str, e.absolute_path)))
        if errors:
            raise RequestInvalid([error_from(e) for e in errors])
        return None


class _ClosingMultiPartParser(MultiPartParser):
    """Parses the form for validation only, then closes its temporary files (the handler
    gets its own parse of the replayed body)."""

    async def parse(self) -> FormData:
        form = await super().parse()
        for _, value in form.multi_items():
            if isinstance(value, UploadFile):
                await value.close()
        return form


class SafeMultiPartValidator(MultiPartFormDataValidator):  # type: ignore[misc]  # connexion is untyped
    """Multipart validator that turns a malformed form into a 422 and leaks no temp files."""

    @property
    def _form_parser_cls(self) -> type[MultiPartParser]:
        return _ClosingMultiPartParser

    async def _parse(self, stream: Any, scope: Any) -> Any:
        try:
            return await super()._parse(stream, scope)
        except BadRequestProblem:
            raise
        except (MultiPartException, ValueError, KeyError) as exc:  # malformed forms
            raise RequestInvalid([{"loc": ["body"], "msg": f"malformed multipart form: {exc}",
                                   "type": "multipart", "input": None, "ctx": {}}]) from None


class AllErrorsParameterValidator(ParameterValidator):  # type: ignore[misc]  # connexion is untyped
    """Parameter validator that lists every bad parameter as ``{loc: [where, name, …], msg,
    type, input}`` (connexion's stops at the first and names none)."""

    def validate_request(self, request: Any) -> None:
        errors: list[dict[str, Any]] = []
        if self.strict_validation:
            extra = self.validate_query_parameter_list(request, security_params=self.security_query_params)
            errors += [{"loc": ["query", name], "msg": f"unknown query parameter {name!r}",
                        "type": "extra_parameter", "input": None, "ctx": {}} for name in sorted(extra)]
        sources: dict[str, Callable[[str], Any]] = {
            "query": lambda name: request.query_params.get(name),
            "path": lambda name: request.path_params.get(name.replace("-", "_")),
            "header": lambda name: request.headers.get(name),
            "cookie": lambda name: request.cookies.get(name)}
        for where, value_of in sources.items():
            for param in self.parameters.get(where, []):
                errors += _parameter_errors(where, param, value_of(param["name"]))
        if errors:
            raise RequestInvalid(errors)


def _parameter_errors(where: str, param: dict[str, Any], value: Any) -> list[dict[str, Any]]:
    """The problems of one parameter's (already parsed) ``value``."""
    name = param["name"]
    if value is None:
        return ([{"loc": [where, name], "msg": f"missing {where} parameter {name!r}", "type": "missing",
                  "input": None, "ctx": {}}] if param.get("required") else [])
    if is_nullable(param) and is_null(value):
        return []
    validator = Draft4Validator(param.get("schema", param), format_checker=Draft4Validator.FORMAT_CHECKER)
    return [{"loc": [where, name, *e.absolute_path], "msg": f"{name}: {e.message}", "type": str(e.validator),
             "input": e.instance if _small(e.instance) else None, "ctx": {}}
            for e in validator.iter_errors(value)]


VALIDATOR_MAP: dict[str, Any] = {
    **CONNEXION_VALIDATORS,
    "parameter": AllErrorsParameterValidator,
    "body": MediaTypeDict({
        "*/*json": AllErrorsJSONBodyValidator,
        "application/x-www-form-urlencoded": CONNEXION_VALIDATORS["body"]["application/x-www-form-urlencoded"],
        "multipart/form-data": SafeMultiPartValidator,
    }),
}
