"""What resolvers get from the server for one request."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cachegql.index import IndexStore, WordsMatched
from cachegql.schema.pagination import DEFAULT_MAX_FIRST


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
