"""Request validation that reports every problem (OpenAPI ``ValidationErrorResponse``).

Connexion's JSON body validator stops at the first error; this one lists one entry per
invalid field as ``{loc, msg, type, input, ctx}``. Undecodable bodies and malformed
multipart forms become 422s instead of 500s, and so does text no database can store or that
passes the input limits (``docs/limits.md``): a NUL character or a lone UTF-16 surrogate in any
string of a JSON body, a parameter or an uploaded file's name; JSON nested deeper than
``json_depth``; a body string longer than ``text_length``.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from connexion.datastructures import MediaTypeDict
from connexion.exceptions import BadRequestProblem, UnsupportedMediaTypeProblem
from connexion.utils import is_null, is_nullable
from connexion.validators import VALIDATOR_MAP as CONNEXION_VALIDATORS
from connexion.validators import JSONRequestBodyValidator, MultiPartFormDataValidator, ParameterValidator
from jsonschema import Draft4Validator, ValidationError
from starlette.datastructures import FormData, Headers, UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser

from benchbook.domain.files import Spool
from benchbook.handlers.forms import FORM_KEY
from benchbook.http.redaction import STATE_KEY, Secrets, secret_names
from benchbook.settings import limits


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


def refuse_untyped_body(scope: Any, media_type: str) -> None:
    """Raise ``UnsupportedMediaTypeProblem`` (415, ``{detail}`` naming ``media_type``) when the
    request carries a body (a ``Content-Length`` above 0, or ``Transfer-Encoding``) but no
    ``Content-Type`` (docs/limits.md, *Fixed rules*). Connexion validates such a body as the
    operation's first media type but hands the handler raw bytes (a 500, issue 33 item 3); a
    request without a body at all (no ``Content-Length``, or 0) passes."""
    headers = Headers(scope=scope)
    if "content-type" in headers:
        return
    length = headers.get("content-length", "").strip()
    if (length.isdigit() and int(length) > 0) or "transfer-encoding" in headers:
        raise UnsupportedMediaTypeProblem(
            detail=f"the request body has no Content-Type: this operation takes {media_type}; send the "
                   f"header Content-Type: {media_type}")


_SECRET_NAMES: dict[int, tuple[Any, frozenset[str]]] = {}


def _secret_names(schema: Any) -> frozenset[str]:
    """:func:`benchbook.http.redaction.secret_names` of an operation's body schema, once per schema
    (Connexion keeps one resolved schema per operation; the schema is kept so its id stays its)."""
    known = _SECRET_NAMES.get(id(schema))
    if known is None or known[0] is not schema:
        known = _SECRET_NAMES[id(schema)] = (schema, secret_names(schema))
    return known[1]


class AllErrorsJSONBodyValidator(JSONRequestBodyValidator):  # type: ignore[misc]  # connexion is untyped
    """JSON body validator that reports every error, and a bad encoding or bad JSON as 422; a
    body without ``Content-Type`` is a 415 (:func:`refuse_untyped_body`). The values the body
    gives to properties the document marks secret (``writeOnly``, ``format: password``) are left
    in ``scope["state"]`` (:mod:`benchbook.http.redaction`) and are in none of the errors."""

    _secrets = Secrets()

    async def wrap_receive(self, receive: Any, *, scope: Any) -> tuple[Any, Any]:
        refuse_untyped_body(scope, "application/json")
        wrapped: tuple[Any, Any] = await super().wrap_receive(receive, scope=scope)
        return wrapped

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
            body = json.loads(text)
        except json.JSONDecodeError as exc:
            raise RequestInvalid([{"loc": ["body", exc.pos], "msg": f"invalid JSON: {exc.msg}",
                                   "type": "json_invalid", "input": None, "ctx": {"error": str(exc)}}]) from None
        except RecursionError:
            depth = limits.current().json_depth
            raise RequestInvalid([{"loc": ["body"], "msg": f"nested deeper than {depth} levels of arrays and objects",
                                   "type": "too_deep", "input": None, "ctx": {"json_depth": depth}}]) from None
        except ValueError as exc:  # e.g. an integer of over 4,300 digits
            raise RequestInvalid([{"loc": ["body"], "msg": f"invalid JSON: {exc}", "type": "json_invalid",
                                   "input": None, "ctx": {}}]) from None
        names = _secret_names(self._schema)
        if names:
            self._secrets = Secrets.of(body, names)
            scope.setdefault("state", {})[STATE_KEY] = self._secrets
        problems = limits.json_problems(body, limits.current(), ("body",))
        if problems:
            raise RequestInvalid([self._secrets.scrub_error({"loc": list(loc), "msg": msg, "type": type_, "input": None,
                                                             "ctx": {}}) for loc, msg, type_ in problems])
        return body

    def _validate(self, body: Any) -> dict[str, Any] | None:
        if not self._nullable and body is None:
            raise RequestInvalid([{"loc": ["body"], "msg": "a JSON body is required", "type": "missing",
                                   "input": None, "ctx": {}}])
        errors = sorted(self._validator.iter_errors(body), key=lambda e: list(map(str, e.absolute_path)))
        if errors:
            raise RequestInvalid([self._secrets.scrub_error(error_from(e)) for e in errors])
        return None


class _SpoolingMultiPartParser(MultiPartParser):
    """Starlette's multipart parser with each file part written, as it streams in, to a
    :class:`~benchbook.domain.files.Spool` in the project's files folder (hashing as it goes)
    instead of a ``SpooledTemporaryFile`` elsewhere (``spools``: every one it made); ``ended``
    once the closing boundary was read."""

    def __init__(self, headers: Headers, stream: Any, *, spool_dir: Path | None) -> None:
        super().__init__(headers, stream)
        self.spool_dir = spool_dir
        self.spools: list[Spool] = []
        self.ended = False

    def on_headers_finished(self) -> None:
        super().on_headers_finished()
        upload = self._current_part.file
        if upload is not None and self.spool_dir is not None:  # a file part: spool it in the files folder
            self._files_to_close_on_error.pop().close()
            spool = Spool(self.spool_dir)
            self.spools.append(spool)
            self._files_to_close_on_error.append(spool)  # type: ignore[arg-type]  # a file-like
            self._current_part.file = UploadFile(spool, size=0, filename=upload.filename,  # type: ignore[arg-type]
                                                 headers=upload.headers)

    def on_end(self) -> None:
        self.ended = True


class StreamingMultiPartValidator(MultiPartFormDataValidator):  # type: ignore[misc]  # connexion is untyped
    """Multipart validator that parses the body once, as it streams in, and hands the parsed
    form on instead of replaying the body (Connexion's keeps every message in memory to replay
    them, and the handler side would parse and spool the files again). Files go straight to
    spools in the files folder (:class:`_SpoolingMultiPartParser`); a body without ``Content-Type``
    is a 415 (:func:`refuse_untyped_body`); the form is left in
    ``scope["extensions"][FORM_KEY]`` for the handler (:func:`benchbook.handlers.forms.parsed_form`), which must close
    it; the body it passes on is empty. A malformed or incomplete form (no closing boundary: a
    client gone) is a 422; whatever stops the parse (a size limit raised from ``receive``)
    leaves no spool behind."""

    spool_dir: Path | None = None
    _parser: _SpoolingMultiPartParser | None = None

    @property
    def _form_parser_cls(self) -> Callable[..., MultiPartParser]:
        def parser(headers: Headers, stream: Any) -> MultiPartParser:
            self._parser = _SpoolingMultiPartParser(headers, stream, spool_dir=self.spool_dir)
            return self._parser
        return parser

    async def wrap_receive(self, receive: Any, *, scope: Any) -> tuple[Any, Any]:
        refuse_untyped_body(scope, "multipart/form-data")
        services = scope.get("state", {}).get("services")
        self.spool_dir = services.project.files_dir if services is not None else None
        if Headers(scope=scope).get("content-length") == "0" and self._required:
            raise BadRequestProblem("RequestBody is required")
        try:
            body = await self._parse(_body_stream(receive), scope)
            assert self._parser is not None
            if not self._parser.ended:
                raise MultiPartException("the body ended before the form's closing boundary")
            self._validate(body)
            refuse_unstorable_form(self._parser.items)
        except BaseException as exc:
            self._discard(keep=())
            if isinstance(exc, (MultiPartException, ValueError, KeyError)):  # malformed forms
                raise RequestInvalid([{"loc": ["body"], "msg": f"malformed multipart form: {exc}",
                                       "type": "multipart", "input": None, "ctx": {}}]) from None
            raise
        form = FormData(self._parser.items)
        self._discard(keep=[value.file for _, value in form.multi_items() if isinstance(value, UploadFile)])
        passed = {**scope, "extensions": {**scope.get("extensions", {}), FORM_KEY: form},
                  "headers": [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"]
                  + [(b"content-length", b"0")]}
        return _empty_body, passed

    def _discard(self, keep: Any) -> None:
        """Remove the spools of the parse except those in ``keep``."""
        for spool in self._parser.spools if self._parser is not None else []:
            if not any(spool is kept for kept in keep):
                spool.close()


async def _body_stream(receive: Any) -> Any:
    """The body's chunks as ``receive`` delivers them. A client gone ends the stream early,
    which the parser then refuses as an incomplete form (its spools removed)."""
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return
        yield message.get("body", b"")
        if not message.get("more_body", False):
            return


async def _empty_body() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


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
        errors += _unstorable_parameters(request)
        if errors:
            raise RequestInvalid(errors)


def refuse_unstorable_form(items: list[tuple[str, Any]]) -> None:
    """Raise ``RequestInvalid`` listing each form field, and each uploaded file's name, that
    holds a NUL character or a lone surrogate (``loc`` ``["body", part]`` or ``["body", part,
    "filename"]``): the file name is stored and shown, and PostgreSQL cannot store NUL."""
    errors: list[dict[str, Any]] = []
    for name, value in items:
        text, where = (value.filename or "", ["body", name, "filename"]) if isinstance(value, UploadFile) \
            else (str(value), ["body", name])
        problem = limits.text_problem(text)
        if problem:
            errors.append({"loc": where, "msg": f"{where[-1]} {problem}", "type": "string_unicode",
                           "input": None, "ctx": {}})
    if errors:
        raise RequestInvalid(errors)


def _unstorable_parameters(request: Any) -> list[dict[str, Any]]:
    """An entry for each query or path parameter (documented or not) holding a NUL character or a
    lone surrogate: text no database stores, refused as it is in bodies."""
    errors: list[dict[str, Any]] = []
    pairs = [("query", k, v) for k, v in dict(request.query_params).items()]
    pairs += [("path", k, v) for k, v in dict(request.path_params).items()]
    for where, name, value in pairs:
        texts = [name, *(v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str))]
        problem = next((p for p in map(limits.text_problem, texts) if p), None)
        if problem:
            errors.append({"loc": [where, name], "msg": f"{name}: {problem}", "type": "string_unicode",
                           "input": None, "ctx": {}})
    return errors


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
        "multipart/form-data": StreamingMultiPartValidator,
    }),
}
