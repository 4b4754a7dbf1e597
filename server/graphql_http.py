"""GraphQL over HTTP at /graphql, as the GraphQL over HTTP spec says; GraphiQL for browsers.

- POST (`application/json` bodies) and GET (query parameters); a GET that is not a query
  is 405; a malformed request (bad JSON, a wrongly typed parameter, no query) is a 400.
- The answer is `application/graphql-response+json` when the client accepts it (then a
  document that fails before execution, in parsing, validation or its variables, is a
  400), else `application/json` (such failures are a 200, as before the spec). Every
  error, whatever the status, is a GraphQL error with `extensions.code`.
- Automatic persisted queries (Apollo's, version 1) over POST and GET.
- GET answers without errors carry an ETag and `Cache-Control: public, max-age=N`.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

import orjson
from graphql import GraphQLError
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.types import Receive, Scope, Send
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.types import ExecutionResult
from strawberry.types.graphql import OperationType

from cachegql.index import shorten
from cachegql.schema import Context, build_schema
from cachegql.server import playground
from cachegql.server.holder import IndexHolder
from cachegql.server.http_cache import GRAPHQL_RESPONSE, JSON, cache_control, etag, negotiate
from cachegql.server.offload import Offloader
from cachegql.server.persisted import PersistedQueries
from cachegql.server.request_info import RequestInfo, request_info
from cachegql.server.settings import Settings

__all__ = ["GraphQLEndpoint"]

BAD_USER_INPUT = "BAD_USER_INPUT"
PERSISTED_QUERY_NOT_FOUND = "PERSISTED_QUERY_NOT_FOUND"
PERSISTED_QUERY_NOT_SUPPORTED = "PERSISTED_QUERY_NOT_SUPPORTED"
_OPERATION_NAME = re.compile(r"^\s*(?:query|mutation|subscription)\s+([_A-Za-z][_0-9A-Za-z]*)")
_GET_ONLY = frozenset({OperationType.QUERY})
_POST = frozenset({OperationType.QUERY, OperationType.MUTATION})


class BadRequestError(Exception):
    """A request the endpoint cannot take: answered with `status` and a coded error."""

    def __init__(self, status: int, message: str, code: str = BAD_USER_INPUT) -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


# Params and _Reply are named tuples, not frozen dataclasses: one of each is made per
# request, and a frozen dataclass's __init__ (an object.__setattr__ a field) costs twice.
class Params(NamedTuple):
    """A GraphQL request's parameters, checked."""

    query: str | None
    variables: dict[str, Any] | None
    operation_name: str | None
    extensions: dict[str, Any] | None


class GraphQLEndpoint:
    """The ASGI app of /graphql; each request is answered from the index current when it
    arrived."""

    def __init__(self, holder: IndexHolder, settings: Settings) -> None:
        self.holder = holder
        self.settings = settings
        self.offloader = Offloader(settings.threads, settings.time_budget)
        self.schema = build_schema(
            settings.max_first,
            runner=self.offloader,
            max_cost=settings.max_cost,
            compiled=settings.compiled,
            inline=settings.inline,
        )
        self.persisted = PersistedQueries(settings.persisted_queries)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self.answer(Request(scope, receive))
        await response(scope, receive, send)

    async def answer(self, request: Request) -> Response:
        info = request_info(request.scope)
        method = "GET" if request.method == "HEAD" else request.method  # uvicorn drops its body
        if method == "GET" and _wants_page(request):
            return HTMLResponse(playground.page())
        media = negotiate(request.headers.get("accept", ""))
        reply = await self._reply(
            method, request.scope["query_string"], media, info, lambda: _params(request)
        )
        return Response(
            reply.body,
            status_code=reply.status,
            headers=dict(reply.headers),
            media_type=reply.media,
        )

    async def answer_post(
        self, content_type: str, body: bytes, media: str | None, info: RequestInfo
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """The answer to a POST whose whole body is `body`: status, raw headers (as
        `answer`'s Response has them) and body, without starlette's Request or Response."""

        async def params() -> Params:
            return _post_params(content_type, body)

        reply = await self._reply("POST", b"", media, info, params)
        headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in reply.headers]
        headers.append((b"content-length", b"%d" % len(reply.body)))
        headers.append((b"content-type", reply.media.encode("latin-1")))
        return reply.status, headers, reply.body

    async def _reply(
        self,
        method: str,
        query_string: bytes,
        media: str | None,
        info: RequestInfo,
        params: Callable[[], Awaitable[Params]],
    ) -> _Reply:
        try:
            if method not in ("GET", "POST"):
                raise BadRequestError(405, f"/graphql answers GET and POST, not {method}")
            if media is None:
                raise BadRequestError(
                    406, f"this endpoint answers {GRAPHQL_RESPONSE} or {JSON}: accept one of them"
                )
            checked = await params()
            query = self._query(checked, info)
            return await self._execute(method, query_string, checked, query, media, info)
        except BadRequestError as exc:
            info.codes.append(exc.code)
            # A malformed request is a 4xx in any media type; a persisted query not
            # found, a GraphQL answer, is a 200 under plain JSON (Apollo's older clients).
            legacy = media != GRAPHQL_RESPONSE and exc.code == PERSISTED_QUERY_NOT_FOUND
            status = 200 if legacy else exc.status
            return _Reply(
                orjson.dumps(
                    {"errors": [{"message": exc.message, "extensions": {"code": exc.code}}]}
                ),
                status,
                media or JSON,
                [("Allow", "GET, HEAD, POST")] if exc.status == 405 else [],
            )

    def _query(self, params: Params, info: RequestInfo) -> str:
        """The query text: given, or remembered under its persisted-query hash."""
        persisted = (params.extensions or {}).get("persistedQuery")
        if persisted is None:
            if not params.query:
                raise BadRequestError(400, "no GraphQL query: send one as 'query'")
            return params.query
        if not isinstance(persisted, dict) or persisted.get("version") != 1:
            raise BadRequestError(
                400,
                "only version 1 of persisted queries is supported",
                PERSISTED_QUERY_NOT_SUPPORTED,
            )
        sha256 = persisted.get("sha256Hash")
        if not isinstance(sha256, str) or not re.fullmatch(r"[0-9a-fA-F]{64}", sha256):
            raise BadRequestError(400, "persistedQuery.sha256Hash must be 64 hexadecimal digits")
        if params.query:
            if not self.persisted.register(sha256, params.query):
                raise BadRequestError(400, "provided sha256Hash does not match the query")
            info.persisted = "registered"
            return params.query
        text = self.persisted.lookup(sha256.lower())
        if text is None:
            info.persisted = "miss"
            # Apollo's clients look for this message and code, then send the query.
            raise BadRequestError(400, "PersistedQueryNotFound", PERSISTED_QUERY_NOT_FOUND)
        info.persisted = "hit"
        return text

    async def _execute(
        self,
        method: str,
        query_string: bytes,
        params: Params,
        query: str,
        media: str,
        info: RequestInfo,
    ) -> _Reply:
        info.operation = params.operation_name or _operation_name(query)
        store = self.holder.store
        try:
            answer = await self.schema.answer(
                query,
                params.variables,
                Context(store=store, max_first=self.settings.max_first),
                params.operation_name,
                _GET_ONLY if method == "GET" else _POST,
            )
        except InvalidOperationTypeError as exc:
            if exc.operation_type is OperationType.SUBSCRIPTION:  # none in the schema
                raise BadRequestError(400, "subscriptions are not served: only queries") from None
            raise BadRequestError(405, "only queries can be sent with GET; use POST") from None
        except CannotGetOperationTypeError:
            if params.operation_name:
                message = f"the document has no operation named {shorten(params.operation_name)}"
            else:
                message = "the document has several operations: name one with 'operationName'"
            raise BadRequestError(400, message) from None
        info.execution = answer.execution
        errors = (answer.result.errors or []) if answer.result is not None else []
        if errors:
            info.codes.extend(str((e.extensions or {}).get("code", "")) for e in errors)
        status = 400 if media == GRAPHQL_RESPONSE and errors and _before_execution(errors) else 200
        headers: list[tuple[str, str]] = []
        if method == "GET":
            if errors:
                headers.append(("Cache-Control", "no-store"))
            else:
                headers.append(("Cache-Control", cache_control(self.settings.cache_max_age)))
                headers.append(("ETag", etag(store.build_id, media, query_string)))
        if answer.body is not None:
            return _Reply(answer.body, status, media, headers)
        assert answer.result is not None
        return _Reply(orjson.dumps(_body(answer.result)), status, media, headers)


class _Reply(NamedTuple):
    """An answer before it is an HTTP response: starlette's, or raw headers (`answer_post`)."""

    body: bytes
    status: int
    media_type: str
    headers: list[tuple[str, str]]

    @property
    def media(self) -> str:
        return f"{self.media_type}; charset=utf-8"


def _wants_page(request: Request) -> bool:
    """A browser asking for the playground: HTML preferred, no query in the URL."""
    accept = request.headers.get("accept", "")
    return "text/html" in accept and "query" not in request.query_params


async def _params(request: Request) -> Params:
    if request.method in ("GET", "HEAD"):
        raw: dict[str, Any] = dict(request.query_params)
        for key in ("variables", "extensions"):
            if raw.get(key):
                raw[key] = _decode(raw[key].encode(), f"'{key}'")
    else:
        content_type = request.headers.get("content-type", "")
        return _post_params(content_type, await _read_body(request.receive))
    return _checked(raw)


def _post_params(content_type: str, body: bytes) -> Params:
    """A POST's parameters from its Content-Type header and whole body."""
    _check_content_type(content_type)
    return _checked(_post_body(body))


def _check_content_type(content_type: str) -> None:
    media, _, parameters = content_type.partition(";")
    if media.strip().lower() != JSON:
        raise BadRequestError(415, f"send the request as {JSON} (got {media.strip() or 'none'})")
    charset = re.search(r"charset=([^;\s]+)", parameters, re.IGNORECASE) if parameters else None
    if charset and charset.group(1).strip("\"'").lower() not in ("utf-8", "utf8"):
        raise BadRequestError(415, "the request body must be UTF-8")


def _post_body(body: bytes) -> dict[str, Any]:
    raw = _decode(body, "the body")
    if isinstance(raw, list):
        raise BadRequestError(400, "batched requests (a JSON list) are not supported")
    if not isinstance(raw, dict):
        raise BadRequestError(400, "the body must be a JSON object with a 'query'")
    return raw


_TEXT = (str, type(None))
_OBJECT = (dict, type(None))


def _checked(raw: dict[str, Any]) -> Params:
    query, variables = raw.get("query"), raw.get("variables")
    name, extensions = raw.get("operationName"), raw.get("extensions")
    # Tuples, not `str | None`: that expression makes a union each time it runs.
    if not isinstance(query, _TEXT):
        raise BadRequestError(400, "'query' must be a string")
    if not isinstance(variables, _OBJECT):
        raise BadRequestError(400, "'variables' must be a JSON object")
    if not isinstance(name, _TEXT):
        raise BadRequestError(400, "'operationName' must be a string")
    if not isinstance(extensions, _OBJECT):
        raise BadRequestError(400, "'extensions' must be a JSON object")
    return Params(query or None, variables, name or None, extensions)


async def _read_body(receive: Receive) -> bytes:
    """The request's body, read straight from `receive` (the body limit hands it over as
    one message): starlette's `Request.body` goes through an async generator."""
    message = await receive()
    chunks: list[bytes] = []
    while message["type"] == "http.request":
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
        message = await receive()
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _decode(data: bytes, what: str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if "not valid UTF-8" in str(exc):  # orjson's words: "str is not valid UTF-8: surrogates"
            raise BadRequestError(400, f"{what} is not valid JSON: not UTF-8 text") from None
        raise BadRequestError(400, f"{what} is not valid JSON: {exc}") from None


def _operation_name(query: str) -> str | None:
    match = _OPERATION_NAME.match(query)
    return match.group(1) if match else None


def _before_execution(errors: list[GraphQLError]) -> bool:
    """Errors of parsing, validation or variables: none has a path into the answer."""
    return all(error.path is None for error in errors)


def _body(result: ExecutionResult) -> dict[str, Any]:
    body: dict[str, Any] = {"data": result.data}
    if result.errors:
        body["errors"] = [error.formatted for error in result.errors]
        if _before_execution(result.errors) and result.data is None:
            del body["data"]  # the request never ran: there is no data, not even null
    if result.extensions:
        body["extensions"] = result.extensions
    return body
