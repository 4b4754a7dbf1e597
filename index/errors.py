"""The error every part of the index raises for input a user can fix, and how it quotes input."""

from __future__ import annotations

__all__ = ["QUOTE_LIMIT", "CriteriaError", "shorten"]

# How much of a user's value an error message quotes: enough to recognise it.
QUOTE_LIMIT = 80


class CriteriaError(ValueError):
    """A filter, query or hash that cannot mean anything, explained for the user."""


def shorten(text: str, limit: int = QUOTE_LIMIT) -> str:
    """`text` quoted for a message (as `repr` does), cut to its first `limit` characters
    when longer, saying how long the whole was.

    Messages quote what the user sent so that they can find the mistake; a value of a
    megabyte must not come back as a megabyte of message (and of logs).
    """
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text):,} characters)"
