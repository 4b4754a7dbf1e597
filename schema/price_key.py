"""The key a plan keeps its price by: what of a request's variables the price reads.

`limits.price` reads a variable's value three ways: `first` as it is; a filter by its
objects' keys and its lists' lengths (`_filter_price`: a string in it costs nothing);
`search` and `query` by their number of words. So a key keeps scalars as they are,
strings as their word count, objects and lists as their shape, and requests with equal
keys have equal prices: `spec(hash: $h)` and a package's page by `$name` are priced once
per index (`direct`), a page size given as a variable once per size. A change to what
`price` reads must change this too (tests/test_limits.py compares prices by key).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

__all__ = ["price_key"]

_KEY_VALUES = 256
_KEY_DEPTH = 16
_KEY_CHARACTERS = 4096
_ABSENT = object()  # a declared variable not given: its default (in the document) holds


def price_key(variables: Mapping[str, Any] | None, names: Sequence[str]) -> Hashable | None:
    """What of the values of the declared variables `names` an operation's price depends
    on: requests with equal keys have equal prices. None (price it each time) past
    `_KEY_VALUES` values, `_KEY_DEPTH` levels or `_KEY_CHARACTERS` of object keys, so that
    a kept key stays small whatever a client sends."""
    if not names:  # no variable declared (most requests): one price
        return ()
    given = variables or {}
    values = [given.get(name, _ABSENT) for name in names]
    if all(type(value) is str for value in values):  # the usual request
        return tuple(len(value.split()) for value in values)
    budget = [_KEY_VALUES, _KEY_CHARACTERS]
    try:
        return tuple(_shape(value, _KEY_DEPTH, budget) for value in values)
    except _KeyTooLargeError:
        return None


class _KeyTooLargeError(Exception):
    """Variables too large to key a price by: it is measured each time."""


def _shape(value: Any, depth: int, budget: list[int]) -> Hashable:
    """`value` as its price sees it; `budget`: the values and characters of keys left."""
    budget[0] -= 1
    if depth < 0 or budget[0] < 0:
        raise _KeyTooLargeError
    if value is _ABSENT:
        return "-"
    if isinstance(value, dict):
        budget[1] -= sum(map(len, value))
        if budget[1] < 0:
            raise _KeyTooLargeError
        return ("{", tuple((k, _shape(v, depth - 1, budget)) for k, v in value.items()))
    if isinstance(value, list):
        return ("[", tuple(_shape(v, depth - 1, budget) for v in value))
    if isinstance(value, str):
        return ("s", len(value.split()))
    return (type(value).__name__, value)
