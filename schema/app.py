"""The strawberry schema of cachegql, with coded errors and bounded queries.

Every operation is executed synchronously: the index answers synchronously, so there
is nothing to await. Where the work runs (on the event loop, in a thread) is for the
server to decide: it passes a `Runner` to `build_schema`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from typing import Any

import strawberry
from graphql import GraphQLError
from strawberry.extensions import MaxTokensLimiter, ParserCache, ValidationCache
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext
from strawberry.types import ExecutionContext, ExecutionResult
from strawberry.types.graphql import OperationType

from cachegql.schema.compiled import CompiledExecutionContext
from cachegql.schema.errors import classify
from cachegql.schema.limits import DEFAULT_MAX_COST, MAX_TOKENS, CostLimit
from cachegql.schema.pagination import DEFAULT_MAX_FIRST
from cachegql.schema.query import Query

__all__ = [
    "DOCUMENT_CACHE_SIZE",
    "CachegqlSchema",
    "Operation",
    "Runner",
    "build_schema",
    "export_sdl",
    "run_here",
]

DOCUMENT_CACHE_SIZE = 256
Operation = Callable[[], ExecutionResult]
Runner = Callable[[str | None, Operation], Awaitable[ExecutionResult]]
"""Runs one operation (given with its query text, to decide by) and returns its result."""


async def run_here(query: str | None, operation: Operation) -> ExecutionResult:
    """The plain runner: the operation runs where it is awaited."""
    return operation()


class CachegqlSchema(strawberry.Schema):
    """A strawberry schema whose async `execute` hands the synchronous work to a runner."""

    def __init__(self, *args: Any, runner: Runner = run_here, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.runner = runner

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
        operation = partial(
            self.execute_sync,
            query,
            variable_values=variable_values,
            context_value=context_value,
            root_value=root_value,
            operation_name=operation_name,
            allowed_operation_types=allowed_operation_types,
            operation_extensions=operation_extensions,
        )
        return await self.runner(query, operation)

    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        for error in errors:
            classify(error)


def build_schema(
    max_first: int = DEFAULT_MAX_FIRST,
    runner: Runner = run_here,
    execution: type[StrawberryGraphQLCoreExecutionContext] = CompiledExecutionContext,
    max_cost: int = DEFAULT_MAX_COST,
) -> CachegqlSchema:
    """The schema, with parsed and validated documents cached (clients repeat their queries).

    A document has at most `MAX_TOKENS` tokens, and each operation is priced before it is
    validated (`limits`): over `max_cost`, it is refused. `execution` is the execution
    context class: compiled plans by default (`compiled`), else the fast one
    (`execution`); tests pass strawberry's stock one to compare.
    """
    return CachegqlSchema(
        query=Query,
        execution_context_class=execution,
        extensions=[
            lambda: MaxTokensLimiter(MAX_TOKENS),
            lambda: ParserCache(maxsize=DOCUMENT_CACHE_SIZE),
            lambda: CostLimit(max_cost),
            lambda: ValidationCache(maxsize=DOCUMENT_CACHE_SIZE),
        ],
        runner=runner,
    )


def export_sdl() -> str:
    """The schema as SDL text, as kept in schema/schema.graphql."""
    return str(build_schema().as_str()) + "\n"
