"""The strawberry schema of cachegql, with coded errors and bounded queries.

Every operation is executed synchronously: the index answers synchronously, so there
is nothing to await. Where the work runs (on the event loop, in a thread) is for the
server to decide: it passes a `Runner` to `build_schema`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from typing import Any, Protocol, TypeVar

import strawberry
from graphql import GraphQLError
from strawberry.extensions import MaxTokensLimiter, ParserCache, ValidationCache
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext
from strawberry.types import ExecutionContext, ExecutionResult
from strawberry.types.graphql import OperationType

from cachegql.index import OverBudgetError, renewed
from cachegql.schema.context import Context
from cachegql.schema.direct import Answer, DirectPath, Ready
from cachegql.schema.errors import QUERY_TOO_COMPLEX, classify
from cachegql.schema.execution import FastExecutionContext
from cachegql.schema.inline import runs_inline, small_request
from cachegql.schema.limits import DEFAULT_MAX_COST, MAX_TOKENS, CostLimit
from cachegql.schema.literal_errors import NamedLiteralErrors
from cachegql.schema.pagination import DEFAULT_MAX_FIRST
from cachegql.schema.query import Query
from cachegql.schema.readers import resolve_directly

__all__ = [
    "DOCUMENT_CACHE_SIZE",
    "CachegqlSchema",
    "Runner",
    "build_schema",
    "export_sdl",
    "run_here",
]

DOCUMENT_CACHE_SIZE = 256
T = TypeVar("T")


class Runner(Protocol):
    """Runs one operation (given with its query text, to decide by, and `inline` when it
    is known to be cheap: `inline.runs_inline`) and returns its result; raises
    `OverBudgetError` when it abandons an operation over its time budget."""

    def __call__(
        self, query: str | None, operation: Callable[[], T], inline: bool = False
    ) -> Awaitable[T]: ...


async def run_here(query: str | None, operation: Callable[[], T], inline: bool = False) -> T:
    """The plain runner: the operation runs where it is awaited."""
    return operation()


class CachegqlSchema(strawberry.Schema):
    """A strawberry schema whose operations run through a runner, each answered by its
    compiled plan where it has one (`direct`), else by the stock path."""

    def __init__(
        self,
        *args: Any,
        runner: Runner = run_here,
        max_cost: int = DEFAULT_MAX_COST,
        compiled: bool = True,
        inline: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        if compiled:  # else strawberry's own path throughout: the reference
            resolve_directly(self._schema, self.schema_converter)
        self.runner = runner
        self.inline = inline
        self.direct = (
            DirectPath(self._schema, self.schema_converter, max_cost) if compiled else None
        )

    async def answer(
        self,
        query: str,
        variables: dict[str, Any] | None = None,
        context: Context | None = None,
        operation_name: str | None = None,
        allowed_operation_types: Iterable[OperationType] | None = None,
    ) -> Answer:
        """`answer_sync`, through the runner. A small request (`inline.small_request`)
        whose plan is prepared is priced and estimated here, before it runs: a cheap one
        runs inline (`inline.runs_inline`)."""
        operation: Callable[[], Answer] | None = None
        inline = False
        if (
            self.inline
            and self._direct_allowed(context, allowed_operation_types)
            and small_request(query, variables)
        ):
            assert self.direct is not None and context is not None
            ready = self.direct.ready(query, variables, operation_name, context, prepare=False)
            if ready is not None:
                inline = isinstance(ready, Ready) and _cheap(ready, context)
                operation = partial(
                    self._finish,
                    ready,
                    query,
                    variables,
                    context,
                    operation_name,
                    allowed_operation_types,
                )
        if operation is None:
            operation = partial(
                self.answer_sync, query, variables, context, operation_name, allowed_operation_types
            )
        try:
            return await self.runner(query, operation, inline)
        except OverBudgetError as exc:
            return Answer("abandoned", result=_over_budget(exc))

    def answer_sync(
        self,
        query: str,
        variables: dict[str, Any] | None = None,
        context: Context | None = None,
        operation_name: str | None = None,
        allowed_operation_types: Iterable[OperationType] | None = None,
    ) -> Answer:
        """The answer of the operation's plan as JSON; else the stock path's result, with
        why the plan did not answer (`direct.EXECUTIONS`)."""
        ready: Ready | Answer = Answer("stock")
        if self._direct_allowed(context, allowed_operation_types):
            assert self.direct is not None and context is not None
            ready = self.direct.ready(query, variables, operation_name, context) or ready
        return self._finish(
            ready, query, variables, context, operation_name, allowed_operation_types
        )

    def _direct_allowed(
        self, context: Context | None, allowed: Iterable[OperationType] | None
    ) -> bool:
        return (
            self.direct is not None
            and context is not None
            and (allowed is None or OperationType.QUERY in allowed)
        )

    def _finish(
        self,
        ready: Ready | Answer,
        query: str,
        variables: dict[str, Any] | None,
        context: Context | None,
        operation_name: str | None,
        allowed_types: Iterable[OperationType] | None,
    ) -> Answer:
        """The plan's answer of a ready operation; else (or when it fails) the stock
        path's."""
        answer = ready
        if isinstance(ready, Ready):
            assert self.direct is not None and context is not None
            answer = self.direct.run(ready, context)
        assert isinstance(answer, Answer)
        if answer.body is not None:
            return answer
        with renewed() if answer.renew_budget else contextlib.nullcontext():
            result = self.execute_sync(
                query,
                variable_values=variables,
                context_value=context,
                operation_name=operation_name,
                allowed_operation_types=allowed_types,
            )
        return Answer(answer.execution, result=result)

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
        """Strawberry's stock execution, through the runner."""
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
        try:
            return await self.runner(query, operation)
        except OverBudgetError as exc:
            return _over_budget(exc)

    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        for error in errors:
            classify(error)


def _cheap(ready: Ready, context: Context) -> bool:
    return ready.reads is not None and runs_inline(
        ready.cost, ready.reads, ready.variables, context, ready.arguments
    )


def _over_budget(exc: OverBudgetError) -> ExecutionResult:
    """The answer of an operation its runner abandoned over its time budget."""
    return ExecutionResult(
        data=None, errors=[GraphQLError(str(exc), extensions={"code": QUERY_TOO_COMPLEX})]
    )


def build_schema(
    max_first: int = DEFAULT_MAX_FIRST,
    runner: Runner = run_here,
    execution: type[StrawberryGraphQLCoreExecutionContext] = FastExecutionContext,
    max_cost: int = DEFAULT_MAX_COST,
    compiled: bool = True,
    inline: bool = True,
) -> CachegqlSchema:
    """The schema, with parsed and validated documents cached (clients repeat their queries).

    A document has at most `MAX_TOKENS` tokens, and each operation is priced before it is
    validated (`limits`): over `max_cost`, it is refused. `answer` runs an operation
    through its compiled plan (`direct`) unless `compiled` is false; else, and for what
    plans do not cover, `execution` is graphql-core's execution context: the fast one by
    default (`execution`); tests pass strawberry's stock one to compare. Unless `compiled`
    is false, graphql-core also calls the resolvers that read only their source directly,
    not through strawberry's wrapper (`readers`). `inline`:
    cheap compiled operations run on the event loop (`inline.runs_inline`).
    """
    return CachegqlSchema(
        query=Query,
        execution_context_class=execution,
        extensions=[
            lambda: MaxTokensLimiter(MAX_TOKENS),
            lambda: ParserCache(maxsize=DOCUMENT_CACHE_SIZE),
            lambda: CostLimit(max_cost),
            NamedLiteralErrors,
            lambda: ValidationCache(maxsize=DOCUMENT_CACHE_SIZE),
        ],
        runner=runner,
        max_cost=max_cost,
        compiled=compiled,
        inline=inline,
    )


def export_sdl() -> str:
    """The schema as SDL text, as kept in schema/schema.graphql."""
    return str(build_schema().as_str()) + "\n"
