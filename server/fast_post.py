"""The usual POST to /graphql answered in one flat pass, not a layer per concern.

Each layer of the GraphQL stack (request id and access record, CORS, gzip, admission, body
limit, response cache, endpoint) is an ASGI app wrapping the next: per request a closure or
two for `send`, a `Headers` made to read a header, the body handed down as a replayed
message, starlette's `Request` and `Response`. For a response cache hit that was most of
its CPU. The usual request, a POST of `application/json` with a declared body within the
limits, from a client that negotiates a media type, is answered here instead, with the same
steps in the same order: admitted, its body read within the body limit's size and time
(no time for a body already received whole: `body.BODY_RECEIVED`), looked up in the
response cache (a hit's headers made once per entry and encoding), else answered by the
endpoint without starlette's objects (`GraphQLEndpoint.answer_post`) and kept; then
gzipped as the compression middleware would (`compression.whole`), sent with its request
id, counted in the metrics and logged (`AccessLog.begin`, `AccessLog.end`).

An app with CORS on does not use it: starlette's CORS middleware edits every answer's
headers (`Vary: Origin`), with or without an `Origin`. Anything else goes to the stack
(`slow`) as before, also when this pass finds out late that it cannot answer: a client gone
before the end of its body is handed over with what was read, a body too slow as the body
limit's own timeout (408), a worker full as admission's 503.
"""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cachegql.server.access_log import AccessLog, internal_error
from cachegql.server.admission import Admission
from cachegql.server.body import BODY_RECEIVED, BodyLimit
from cachegql.server.compression import accepts_gzip, whole
from cachegql.server.graphql_http import GraphQLEndpoint
from cachegql.server.http_cache import negotiate
from cachegql.server.response_cache import MAX_BODY_BYTES, Key, ResponseCache, replay

__all__ = ["FastPost"]

_JSON = "application/json"


class FastPost:
    """ASGI app for POSTs of /graphql (the front door routes them here)."""

    def __init__(
        self,
        slow: ASGIApp,
        *,
        log: AccessLog,
        admission: Admission,
        limit: BodyLimit,
        cache: ResponseCache,
        endpoint: GraphQLEndpoint,
        gzip_min_bytes: int,
    ) -> None:
        self.slow = slow
        self.log = log
        self.admission = admission
        self.limit = limit
        self.cache = cache
        self.endpoint = endpoint
        self.gzip_min_bytes = gzip_min_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        eligible = self._eligible(scope)
        media = None if eligible is None else negotiate(eligible[1])
        if eligible is None or media is None:
            await self.slow(scope, receive, send)
            return
        content_type = eligible[0]
        admission = self.admission
        if 0 < admission.max_requests <= admission.in_progress:
            await self.slow(scope, receive, send)  # answered 503 there
            return
        start = time.perf_counter()
        admission.arrived += 1
        admission.in_progress += 1
        try:
            try:
                received = scope.get(BODY_RECEIVED, False)
                read, body = await self._read(receive, eligible[2], received)
            except TimeoutError:
                await self._answer(scope, send, None, media, b"", start)
                return
            if body is not None:
                await self._answer(scope, send, content_type, media, body, start)
                return
        finally:
            # Whatever ends the read (a client gone, a cancel at shutdown), the slot is
            # given back: a slot lost per request would leave the worker answering 503.
            admission.in_progress -= 1
        await self.slow(scope, replay(read, receive), send)

    def _eligible(self, scope: Scope) -> tuple[str, str, int] | None:
        """The request's Content-Type and Accept, and the most body bytes this pass reads,
        if it may answer it, else None."""
        content_type = length = accept = None
        for name, value in scope["headers"]:  # the first of each, as `Headers.get`
            if name == b"content-type":
                if content_type is None:
                    content_type = value
            elif name == b"content-length":
                if length is None:
                    length = value
            elif name == b"accept" and accept is None:
                accept = value
        if content_type is None or length is None or not length.isdigit():
            return None
        bound = self.limit.max_bytes
        if self.cache.max_bytes > 0:
            bound = min(bound, MAX_BODY_BYTES)  # what the cache reads to look up
        if int(length) > bound or len(scope["query_string"]) > self.limit.max_bytes:
            return None
        text: str = content_type.decode("latin-1")
        if text != _JSON and text.split(";")[0].strip() != _JSON:  # as the cache's key asks
            return None
        return text, "" if accept is None else accept.decode("latin-1"), bound

    async def _read(
        self, receive: Receive, bound: int, received: bool
    ) -> tuple[list[Message], bytes | None]:
        """The messages read, and the body if it came whole within the body limit's time
        and within `bound` bytes (counted as read, whatever Content-Length declared);
        reading stops past `bound`, and the stack refuses the rest. A body the protocol
        has `received` whole is read without a deadline: `receive()` cannot wait."""
        if received:
            read = await _messages(receive, bound)
        else:
            read = await self.limit.deadlines.run(lambda: _messages(receive, bound))
        last = read[-1]
        if last["type"] != "http.request" or last.get("more_body", False):
            return read, None
        body: bytes = (
            read[0].get("body", b"")
            if len(read) == 1
            else b"".join(m.get("body", b"") for m in read)
        )
        return read, body if len(body) <= bound else None

    async def _answer(
        self,
        scope: Scope,
        send: Send,
        content_type: str | None,
        media: str,
        body: bytes,
        start: float,
    ) -> None:
        """Answer, send and log the request; `content_type` None: its body was too slow
        (408, logged with the time it was waited for, as the stack's body limit does)."""
        log = self.log
        info, id_header = log.begin(scope)
        logging_on = log.logging_on()
        arrived = time.time() - (time.perf_counter() - start) if logging_on else 0.0
        status = sent = 0

        async def with_id(message: Message) -> None:
            """`send` for an answer made elsewhere (a 408, a 500): the request id added,
            the status and size noted for the access record."""
            nonlocal status, sent
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [*message["headers"], id_header]}
            else:
                sent += len(message.get("body", b""))
            await send(message)

        try:
            if content_type is None:
                await self.limit.refuse_too_slow(with_id)
                return
            cache = self.cache
            key: Key | None = None
            entry = None
            if cache.max_bytes > 0:
                key = (cache.build_id(), media, "POST", body)
                entry = cache.hit(key, info)
            minimum = self.gzip_min_bytes
            if entry is not None:
                code = entry.status
                if minimum > 0:
                    headers, out = cache.sent(entry, minimum, accepts_gzip(scope["headers"]))
                else:
                    headers, out = entry.headers, entry.body
            else:
                code, headers, out = await self.endpoint.answer_post(
                    content_type, body, media, info
                )
                if key is not None and not info.codes:
                    cache.keep(key, code, headers, out, info.operation)
                if minimum > 0:
                    headers, out = whole(headers, out, minimum, accepts_gzip(scope["headers"]))
            status = code
            await send(
                {"type": "http.response.start", "status": code, "headers": [*headers, id_header]}
            )
            await send({"type": "http.response.body", "body": out})
            sent = len(out)
        except Exception:
            if not status:  # answered 500 with the request id, as the access record does
                await internal_error(with_id)
            raise
        finally:
            log.end(scope, info, status, time.perf_counter() - start, sent, arrived, logging_on)


async def _messages(receive: Receive, bound: int) -> list[Message]:
    """A body's messages, up to its last (or the client's leaving), or until more than
    `bound` bytes came."""
    read: list[Message] = []
    size = 0
    while True:
        message = await receive()
        read.append(message)
        if message["type"] != "http.request" or not message.get("more_body", False):
            return read
        size += len(message.get("body", b""))
        if size > bound:
            return read
