"""Automatic persisted queries (Apollo's protocol, version 1): query texts by sha256.

A client sends only `extensions.persistedQuery.sha256Hash`; the server answers from the
text it remembers, or with PERSISTED_QUERY_NOT_FOUND, and the client sends the text once
with its hash. Each worker remembers a bounded number, least recently used first out.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict

__all__ = ["PersistedQueries"]


class PersistedQueries:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._texts: OrderedDict[str, str] = OrderedDict()

    def __len__(self) -> int:
        return len(self._texts)

    def lookup(self, sha256: str) -> str | None:
        text = self._texts.get(sha256)
        if text is not None:
            self._texts.move_to_end(sha256)
        return text

    def register(self, sha256: str, text: str) -> bool:
        """Remember `text` under its hash; False when `sha256` is not the text's hash."""
        if hashlib.sha256(text.encode()).hexdigest() != sha256.lower():
            return False
        if self.capacity > 0:
            self._texts[sha256.lower()] = text
            self._texts.move_to_end(sha256.lower())
            while len(self._texts) > self.capacity:
                self._texts.popitem(last=False)
        return True
