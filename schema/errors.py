"""GraphQL errors with `extensions.code`, and the mapping from index errors to them."""

from __future__ import annotations

import logging

from graphql import GraphQLError

from cachegql.index import (
    AmbiguousHashError,
    CriteriaError,
    IndexChangedError,
    OverBudgetError,
    SpecQueryError,
)

__all__ = [
    "AMBIGUOUS_HASH_PREFIX",
    "BAD_USER_INPUT",
    "CHANGED_MESSAGE",
    "INTERNAL_MESSAGE",
    "INTERNAL_SERVER_ERROR",
    "QUERY_TOO_COMPLEX",
    "UserInputError",
    "classify",
]

BAD_USER_INPUT = "BAD_USER_INPUT"
AMBIGUOUS_HASH_PREFIX = "AMBIGUOUS_HASH_PREFIX"
QUERY_TOO_COMPLEX = "QUERY_TOO_COMPLEX"
INTERNAL_SERVER_ERROR = "INTERNAL_SERVER_ERROR"
INTERNAL_MESSAGE = "Internal server error; the server log has the details."
CHANGED_MESSAGE = (
    "A file of the index build being served changed on disk since it was verified; "
    "what reads it cannot be answered until a new build is published."
)
TOO_MANY_TOKENS = "Document contains more than"
"""What graphql-core's parser says of a document over its token limit."""

ARGUMENT = "Argument '"
"""How graphql-core's refusals of an argument's value begin (`coerce_argument`)."""

_PYTHON_NONE = " not to be None."
"""How graphql-core 3.3 says a null where a non-null type is expected: in Python's words."""

logger = logging.getLogger("cachegql.errors")


class UserInputError(CriteriaError):
    """Bad input found by the schema layer itself (a cursor, a `first`)."""


def classify(error: GraphQLError) -> None:
    """Give `error` its code; hide what an internal error says, and log it instead."""
    extensions = dict(error.extensions or {})
    original = error.original_error
    if "code" in extensions:
        pass
    elif isinstance(original, AmbiguousHashError):
        extensions.update(
            code=AMBIGUOUS_HASH_PREFIX, candidates=original.candidates, count=original.count
        )
    elif isinstance(original, SpecQueryError):
        # A terminal gets the query with a caret under the column; a GraphQL client shows
        # a message as it is, in one line, and can mark the column itself.
        near = " ".join(original.near.split())
        error.message = f"{original.said} (in the query: {near})"
        extensions.update(code=BAD_USER_INPUT, column=original.column)
    elif isinstance(original, CriteriaError):
        extensions["code"] = BAD_USER_INPUT
    elif isinstance(original, OverBudgetError):
        extensions["code"] = QUERY_TOO_COMPLEX
    elif isinstance(original, GraphQLError) and original.message.startswith(ARGUMENT):
        # An argument graphql-core refused as the field ran: a variable given null where
        # its default would fit a non-null argument, say. The request's, and said so.
        extensions["code"] = BAD_USER_INPUT
    elif TOO_MANY_TOKENS in error.message:
        extensions["code"] = QUERY_TOO_COMPLEX  # the parser gave up: too big, not wrong
    elif original is None or error.path is None:
        # Parse, validation and variable errors come before any resolver runs:
        # the request itself is wrong.
        extensions["code"] = BAD_USER_INPUT
    else:
        changed = isinstance(original, IndexChangedError)
        if changed:
            # Known and already explained: the server's look logs the file's change
            # once; each answer it spoils gets a line without a traceback.
            logger.error("internal error at %s: %s", error.path, original)
        else:
            logger.error("internal error at %s", error.path, exc_info=original)
        error.message = CHANGED_MESSAGE if changed else INTERNAL_MESSAGE
        error.original_error = None
        extensions["code"] = INTERNAL_SERVER_ERROR
    if extensions["code"] == BAD_USER_INPUT and _PYTHON_NONE in error.message:
        error.message = error.message.replace(_PYTHON_NONE, " not to be null.")
    error.extensions = extensions
    # A traceback holds the frames that hold the error: a cycle that would keep the
    # request (and the index it read) alive until the cycle collector runs. The error is
    # reported and logged by now; its traceback is not needed.
    error.__traceback__ = None
    if error.original_error is not None:
        error.original_error.__traceback__ = None
