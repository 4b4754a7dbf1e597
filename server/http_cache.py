"""What an answer's HTTP caching depends on: the media type negotiated, the ETag, the
Cache-Control header. Shared by the GraphQL endpoint and the response cache in front of it.

An answer is a function of the index build and the request: so a GET answer's ETag is a
digest of the build id, the negotiated media type and the query string, known before the
query runs, and a conditional GET (`If-None-Match`) is answered 304 without running it.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache

__all__ = [
    "GRAPHQL_RESPONSE",
    "JSON",
    "cache_control",
    "etag",
    "matches",
    "negotiate",
]

GRAPHQL_RESPONSE = "application/graphql-response+json"
JSON = "application/json"
_ACCEPTED = (GRAPHQL_RESPONSE, JSON)
NEGOTIATED = 256


_REMEMBERED_LENGTH = 256
"""Longer `Accept` headers are parsed each time: remembered, 256 of 64 KB each (the head
limit) would hold 16 MB per worker for whoever sends them."""


def negotiate(accept: str) -> str | None:
    """The media type of the answer to a request with this `Accept`, as the GraphQL over
    HTTP spec says: the client's preferred one of ours (by q, then by its order); JSON when
    it says nothing or accepts anything; None when it accepts neither (406).

    Remembered for the last `NEGOTIATED` headers: clients send the same few, and parsing
    one was a tenth of a cached answer's CPU."""
    if len(accept) <= _REMEMBERED_LENGTH:
        return _remembered(accept)
    return _negotiate(accept)


@lru_cache(maxsize=NEGOTIATED)
def _remembered(accept: str) -> str | None:
    return _negotiate(accept)


def _negotiate(accept: str) -> str | None:
    if not accept.strip():
        return JSON
    best: tuple[float, int, str] | None = None
    for position, item in enumerate(accept.split(",")):
        media, _, parameters = item.strip().partition(";")
        media = media.strip().lower()
        quality = 1.0
        for parameter in parameters.split(";"):
            name, _, value = parameter.strip().partition("=")
            if name.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if quality <= 0:
            continue
        if media in _ACCEPTED:
            chosen = media
        elif media in ("*/*", "application/*"):
            chosen = JSON
        else:
            continue
        candidate = (-quality, position, chosen)
        if best is None or candidate < best:
            best = candidate
    return None if best is None else best[2]


def etag(build_id: str, media_type: str, query_string: bytes) -> str:
    """A weak ETag (weak: gzip may re-encode the bytes) for a GET answer."""
    digest = hashlib.blake2b(digest_size=12)
    for part in (build_id.encode(), media_type.encode(), query_string):
        digest.update(part)
        digest.update(b"\0")
    return f'W/"{digest.hexdigest()}"'


def matches(if_none_match: str, tag: str) -> bool:
    """Whether an `If-None-Match` header names `tag` (weak comparison, `*` included)."""
    opaque = tag.removeprefix("W/")
    for candidate in if_none_match.split(","):
        candidate = candidate.strip()
        if candidate == "*" or candidate.removeprefix("W/") == opaque:
            return True
    return False


def cache_control(max_age: int) -> str:
    """For GET answers without errors: shareable by browsers and CDNs for `max_age` s."""
    return f"public, max-age={max_age}" if max_age > 0 else "no-cache"
