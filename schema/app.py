"""The strawberry schema of cachegql, executed off the event loop, with coded errors."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache, partial
from typing import Any

import anyio.to_thread
import strawberry
from graphql import FieldNode, GraphQLError, Visitor, parse, visit
from strawberry.extensions import AddValidationRules, ParserCache, ValidationCache
from strawberry.types import ExecutionContext, ExecutionResult
from strawberry.types.graphql import OperationType

from schema.errors import classify
from schema.execution import FastExecutionContext
from schema.limits import CONNECTION_FIELDS, complexity_rule
from schema.pagination import DEFAULT_MAX_FIRST
from schema.query import Query

DOCUMENT_CACHE_SIZE = 256


@lru_cache(maxsize=DOCUMENT_CACHE_SIZE)
def runs_inline(query: str | None) -> bool:
    """Whether a query only reads precomputed data (no connection, no search), so that
    running it on the event loop costs less than handing it to a thread."""
    if not query:
        return False
    try:
        document = parse(query)
    except GraphQLError:
        return False
    expensive = False

    class Finder(Visitor):
        def enter_field(self, node: FieldNode, *_: Any) -> None:
            nonlocal expensive
            if node.name.value in CONNECTION_FIELDS:
                expensive = True

    visit(document, Finder())
    return not expensive


class CachegqlSchema(strawberry.Schema):
    """Runs operations that may take long in a worker thread: the index and whoosh calls
    are blocking, and the event loop must stay free for other requests.

    One thread at a time: the work is CPU-bound Python, so more threads only fight over
    the GIL (measured at 1M specs: 280 filtered pages/s with up to 40 threads, 435 with
    one). More cores are used with more worker processes.
    """

    _executor: anyio.CapacityLimiter | None = None

    async def execute(
        self,
        query: str | None,
        variable_values: dict[str, Any] | None = None,
        context_value: Any | None = None,
        root_value: Any | None = None,
        operation_name: str | None = None,
        allowed_operation_types: Iterable[OperationType] | None = None,
        operation_extensions: dict[str, Any] | None = None,
    ) -> ExecutionResult:
        run = partial(
            self.execute_sync,
            query,
            variable_values=variable_values,
            context_value=context_value,
            root_value=root_value,
            operation_name=operation_name,
            allowed_operation_types=allowed_operation_types,
            operation_extensions=operation_extensions,
        )
        if runs_inline(query):
            return run()
        if self._executor is None:
            self._executor = anyio.CapacityLimiter(1)
        return await anyio.to_thread.run_sync(run, limiter=self._executor)

    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        for error in errors:
            classify(error)


def build_schema(max_first: int = DEFAULT_MAX_FIRST) -> CachegqlSchema:
    """The schema, with parsed and validated documents cached (clients repeat their queries)."""
    rule = complexity_rule(max_first=max_first)
    return CachegqlSchema(
        query=Query,
        execution_context_class=FastExecutionContext,
        extensions=[
            lambda: ParserCache(maxsize=DOCUMENT_CACHE_SIZE),
            lambda: ValidationCache(maxsize=DOCUMENT_CACHE_SIZE),
            lambda: AddValidationRules([rule]),
        ],
    )


def export_sdl() -> str:
    """The schema as SDL text, as kept in schema/schema.graphql."""
    return str(build_schema().as_str()) + "\n"
