"""The error every part of the index raises for input a user can fix."""

from __future__ import annotations

__all__ = ["CriteriaError"]


class CriteriaError(ValueError):
    """A filter, query or hash that cannot mean anything, explained for the user."""
