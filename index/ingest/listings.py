"""Listings: the `{"<tag>": [{"label": ..., "url": ...}]}` documents that name the build
caches of each tag and stack, as cache.spack.io publishes them; and the JSON errors of any
document a build reads, said as a user reads them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from cachegql.index.ingest.dag_nodes import SourceFormatError
from cachegql.index.ingest.limits import JSON_MAX_DEPTH, SourceLimits, flag_of
from cachegql.index.ingest.locations import Location, ReadError, UrlMap, without_query
from cachegql.index.records import Problem

__all__ = ["ListingEntry", "is_listing", "json_document", "json_error", "read_listing"]


@dataclass(frozen=True, slots=True)
class ListingEntry:
    """One stack of a listing: its tag, its label, and where its build cache is."""

    tag: str
    label: str
    location: Location


def is_listing(document: object) -> bool:
    """`{"<tag>": [{"label": ..., "url": ...}, ...]}`."""
    return (
        isinstance(document, dict)
        and bool(document)
        and all(
            isinstance(entries, list)
            and all(isinstance(e, dict) and "label" in e and "url" in e for e in entries)
            for entries in document.values()
        )
    )


def mapped_url(url: str, url_map: UrlMap) -> str:
    """`url` with the first prefix of `url_map` it starts with replaced; mapped to a local
    path, without its query (a signature or token is for the network's copy)."""
    for prefix, replacement in url_map:
        if url.startswith(prefix):
            rest = url[len(prefix) :]
            if without_query(url) != url and not Location(replacement + rest).is_url:
                rest = rest.split("#", 1)[0].split("?", 1)[0]
            return replacement + rest
    return url


def read_listing(
    data: bytes, location: Location, max_entries: int | None = None, url_map: UrlMap = ()
) -> tuple[list[ListingEntry], list[Problem]]:
    """The entries of a listing, their urls resolved against the listing's location, then
    mapped by `url_map` (binaries.spack.io's names its stacks by `s3://spack-binaries/`
    URLs, which cache.spack.io reads from `https://binaries.spack.io/`).

    An entry the origin rules refuse (a local file named by a listing read from the
    network) is a problem, never read; a listing of more than `max_entries` is refused.
    The map is the user's, not the listing's: it may name local files.
    """
    document = json_document(data, str(location))
    if not is_listing(document):
        raise SourceFormatError(
            'not a cache listing: expected {"<tag>": [{"label": ..., "url": ...}, ...]}'
        )
    named = sum(len(items) for items in document.values())
    max_entries = SourceLimits().max_listing_entries if max_entries is None else max_entries
    if named > max_entries:
        raise SourceFormatError(
            f"the listing names {named:,} stacks, over the limit of {max_entries:,} "
            f"({flag_of('max_listing_entries')}); skipped whole"
        )
    entries, problems = [], []
    for tag, items in document.items():
        for item in items:
            label, url = item.get("label"), item.get("url")
            if not isinstance(label, str) or not label or not isinstance(url, str) or not url:
                problems.append(
                    Problem(
                        str(location),
                        f"entry {item!r} of tag {tag!r} skipped: "
                        "'label' and 'url' must be non-empty strings",
                    )
                )
                continue
            try:
                resolved = location.sibling(url).text
                entries.append(
                    ListingEntry(str(tag), label, Location.of(mapped_url(resolved, url_map)))
                )
            except ReadError as exc:
                problems.append(
                    Problem(str(location), f"entry {label!r} of tag {tag!r} skipped: {exc}")
                )
    return entries, problems


def json_document(data: bytes, source: str) -> Any:
    """The JSON document in `data`; SourceFormatError, naming `source`, if it is none."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise SourceFormatError(f"{source}: {json_error(exc)}") from None


def json_error(error: orjson.JSONDecodeError) -> str:
    """What is wrong with a JSON document, the depth limit said as one."""
    if "depth limit" in str(error) or "recursion" in str(error).lower():
        return f"not valid JSON: nested deeper than {JSON_MAX_DEPTH:,} levels"
    if "not valid UTF-8" in str(error):  # orjson's words for bytes that are not UTF-8 text
        return "not valid JSON: not UTF-8 text"
    return f"not valid JSON ({error})"
