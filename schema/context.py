"""What resolvers get from the server for one request."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from cachegql.index import IndexStore, WordsMatched
from cachegql.schema.pagination import DEFAULT_MAX_FIRST

In = TypeVar("In")
Out = TypeVar("Out")


@dataclass
class Context:
    """The index to answer from (fixed for the whole request) and the limits."""

    store: IndexStore
    max_first: int = DEFAULT_MAX_FIRST
    # Objects built during this request, so that a page of specs shares its packages.
    cache: dict[Any, Any] = field(default_factory=dict)

    def words_matched(self, tag: str) -> WordsMatched:
        """What this request's search words matched in `tag` so far, for its other
        searches of the same words (`cachegql.index.WordsMatched`)."""
        words: WordsMatched = self.cache.setdefault(("words matched", tag), {})
        return words

    def converted(self, value: In, convert: Callable[[In], Out]) -> Out:
        """`convert(value)` once per object in this request: a filter given as an argument
        is converted by the operation's estimate (`inline`) and again by its answer."""
        key = ("converted", convert, id(value))
        known = self.cache.get(key)
        if known is None:
            # Kept with the value: while it lives, no other object has its id.
            known = self.cache[key] = (value, convert(value))
        result: Out = known[1]
        return result
