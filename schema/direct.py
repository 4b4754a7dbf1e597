"""Answers written straight to JSON by compiled plans, without the per-request machinery.

On the stock path every request goes through strawberry's extension hooks (token limit,
parser and validation caches, cost limit), graphql-core's execution context and result
object, and then formatting. For a query the compiler covers (`compiled`), this does the
per-document part once, keyed by the document's text and operation name: parsing within
`MAX_TOKENS`, choosing the operation, validating it with strawberry's rules, compiling
its plan. Each request then prices the operation (the cost limit, with the request's
variables and the served index's bounds, exactly as `CostLimit` does), coerces its
variables, runs the plan and writes `{"data": ...}` with orjson.

Documents that differ only in their strings are answered by one operation prepared for
their shape, each string a variable (`literal_shapes`): from the third document of a
shape on, a client writing a new hash into each query's text has nothing parsed,
validated or compiled. Anything else is declined, with the reason, and the caller runs
the stock path, which answers exactly as it always has, errors included. `EXECUTIONS`
names the reasons. Documents over `MAX_PLANNED_CHARS` are not planned (the caches hold at
most `PLAN_CACHE_SIZE` documents and as many shapes, so at most twice that many times
this much text).
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from threading import Lock
from typing import Any, NamedTuple

import orjson
from graphql import (
    ASTValidationRule,
    DocumentNode,
    FragmentDefinitionNode,
    GraphQLError,
    GraphQLSchema,
    OperationDefinitionNode,
    parse,
)
from graphql.execution.values import VariableValues, get_variable_values
from strawberry.schema.schema import validate_document
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types import ExecutionResult

from cachegql.index import OverBudgetError, SizeBounds, size_bounds
from cachegql.schema.compiled import Arguments, Plan, compile_operation
from cachegql.schema.context import Context
from cachegql.schema.inline import Reads
from cachegql.schema.limits import MAX_TOKENS, price
from cachegql.schema.literal_shapes import (
    Shapes,
    StringLiterals,
    as_variables,
    string_literals,
    with_strings,
)
from cachegql.schema.price_key import price_key
from cachegql.schema.validation_rules import rules_for
from cachegql.schema.variables import VariablesAsGiven

__all__ = [
    "EXECUTIONS",
    "MAX_PLANNED_CHARS",
    "PLAN_CACHE_SIZE",
    "STATS",
    "Answer",
    "DirectPath",
    "Ready",
]

PLAN_CACHE_SIZE = 256
MAX_PLANNED_CHARS = 64 * 1024
EXECUTIONS = {
    "compiled": "answered by its plan, written straight to JSON",
    "uncovered": "not covered by the compiler (introspection, directives, ...): stock path",
    "fallback": "its plan raised or met a value it does not complete: stock path",
    "invalid": "failed before execution (parsing, validation, cost, variables): stock path",
    "stock": "compiled plans are off: stock path",
    "abandoned": "ran past its time budget and grace: answered QUERY_TOO_COMPLEX",
}
"""How an operation was executed, as counted in `/metrics` (`cachegql_executions_total`)."""
STATS: Counter[str] = Counter()
"""The executions of this process, by the names of `EXECUTIONS`."""


# Answer and Ready are named tuples, not frozen dataclasses: one of each is made per
# request, and a frozen dataclass's __init__ (an object.__setattr__ a field) costs twice.
class Answer(NamedTuple):
    """How one operation was answered: JSON bytes from a plan, or the stock path's result."""

    execution: str
    body: bytes | None = None
    result: ExecutionResult | None = None
    renew_budget: bool = False
    """The plan spent part of the time budget and failed for another reason: the stock
    path gets the whole budget again (`index.renewed`), as it would have had alone."""


@dataclass(slots=True)
class _Prepared:
    """A document and operation, parsed and validated once; `plan` None when declined."""

    execution: str
    operation: OperationDefinitionNode | None = None
    fragments: dict[str, FragmentDefinitionNode] | None = None
    plan: Plan | None = None
    prices: tuple[tuple[SizeBounds, int], dict[Hashable, int]] | None = None
    """The index bounds and page limit, and the prices within the cost limit measured with
    them, by `price_key` of the variables: one cannot change until the bounds or the limit
    do (kept for a few keys: most requests share one). One attribute, replaced whole."""
    variable_names: tuple[str, ...] = ()
    """The operation's declared variables: the only ones its price can read."""
    reads: Reads | None = None
    """The rows it reads, for a request's variables (`inline`)."""
    as_given: VariablesAsGiven | None = None
    """Its variables, where requests may have them as given (`variables`)."""


class Ready(NamedTuple):
    """An operation priced within the limit, its variables coerced: its plan can run."""

    plan: Plan
    variables: VariableValues
    cost: int
    reads: Reads | None
    arguments: Arguments
    """Fields' arguments converted for these variables before the plan runs (`inline`)."""


# Prices kept per operation; a client varying the shape of its variables starts them again.
PRICES_KEPT = 32
_INVALID = _Prepared("invalid")
_UNCOVERED = _Prepared("uncovered")


class DirectPath:
    """The plans of recent documents, and how a request is answered by one."""

    def __init__(
        self,
        schema: GraphQLSchema,
        converter: GraphQLCoreConverter,
        max_cost: int,
        size: int = PLAN_CACHE_SIZE,
    ) -> None:
        self.schema = schema
        self.converter = converter
        self.max_cost = max_cost
        self.size = size
        self._prepared: OrderedDict[tuple[str, str | None], _Prepared] = OrderedDict()
        self._lock = Lock()
        self.shapes: Shapes[_Prepared] = Shapes(size)

    def answer(
        self,
        query: str,
        variables: dict[str, Any] | None,
        operation_name: str | None,
        context: Context,
    ) -> Answer:
        """The answer of a plan, or an `Answer` with no body saying why there is none."""
        ready = self.ready(query, variables, operation_name, context)
        assert ready is not None
        return ready if isinstance(ready, Answer) else self.run(ready, context)

    def ready(
        self,
        query: str,
        variables: dict[str, Any] | None,
        operation_name: str | None,
        context: Context,
        *,
        prepare: bool = True,
    ) -> Ready | Answer | None:
        """The operation priced within the limit and its variables coerced, ready to run;
        else an `Answer` saying why not; None when it is not prepared yet and `prepare`
        is false (preparing a new document can take milliseconds)."""
        if prepare:
            prepared, variables = self._prepare(query, operation_name, variables, context)
        else:
            known, _ = self._known(query, operation_name, variables)
            if known is None:
                return None
            prepared, variables = known
        if prepared.plan is None:
            return _declined(prepared.execution)
        assert prepared.operation is not None and prepared.fragments is not None
        cost = self._within_cost(prepared, variables, context)
        if cost is None:
            return _declined("invalid")
        coerced = self._coerced(prepared, variables)
        if coerced is None:
            return _declined("invalid")
        return Ready(prepared.plan, coerced, cost, prepared.reads, {})

    def run(self, ready: Ready, context: Context) -> Answer:
        """The answer of a ready plan; without a body when the stock path must answer."""
        try:
            body = orjson.dumps(
                {"data": ready.plan.run(None, context, ready.variables, ready.arguments)}
            )
        except OverBudgetError:
            # Out of time: the stock path meets the same passed deadline, and says so.
            return _declined("fallback")
        except Exception:
            # Dropped with its frames: the stock path reports its own error.
            return _declined("fallback", renew_budget=True)
        STATS["compiled"] += 1
        return Answer("compiled", body)

    def _coerced(
        self, prepared: _Prepared, variables: dict[str, Any] | None
    ) -> VariableValues | None:
        """The request's values of the operation's variables, coerced; None when they do
        not coerce."""
        if not prepared.variable_names:  # none declared: what is given is never read
            return VariableValues({}, {})
        given = prepared.as_given(variables or {}) if prepared.as_given is not None else None
        if given is not None:
            return given
        assert prepared.operation is not None
        coerced = get_variable_values(
            self.schema, prepared.operation.variable_definitions or (), variables or {}
        )
        return None if isinstance(coerced, list) else coerced

    def __len__(self) -> int:
        return len(self._prepared)

    def _prepare(
        self,
        query: str,
        operation_name: str | None,
        variables: dict[str, Any] | None,
        context: Context,
    ) -> tuple[_Prepared, dict[str, Any] | None]:
        """The prepared operation of the document, or of its shape, and the variables
        to run it with (`literal_shapes`)."""
        if len(query) > MAX_PLANNED_CHARS:
            return _UNCOVERED, variables
        known, literals = self._known(query, operation_name, variables)
        if known is not None:
            return known
        # A shape is prepared when its second document comes: a client whose every
        # document has a shape of its own (new aliases) pays no second preparation.
        if literals is not None and self.shapes.seen_once(literals, operation_name):
            shaped = self._prepare_shape(query, operation_name, variables, context, literals)
            if shaped is not None:
                return shaped
        prepared = self._prepare_new(query, operation_name, variables, context)
        if prepared is None:  # not kept: a cost over the limit may depend on the variables
            return _INVALID, variables
        with self._lock:
            self._prepared[(query, operation_name)] = prepared
            while len(self._prepared) > self.size:
                self._prepared.popitem(last=False)
        if literals is not None and prepared.plan is not None:
            self.shapes.saw(literals, operation_name)
        return prepared, variables

    def _known(
        self, query: str, operation_name: str | None, variables: dict[str, Any] | None
    ) -> tuple[tuple[_Prepared, dict[str, Any] | None] | None, StringLiterals | None]:
        """The prepared operation, if this document and name, or its shape, were
        prepared before, and the variables to run it with; and the document's strings,
        found only when the document itself is not known (a client that sends its values
        as variables repeats its documents), for its preparation: None when it was known
        or has none."""
        key = (query, operation_name)
        with self._lock:
            prepared = self._prepared.get(key)
            if prepared is not None:
                self._prepared.move_to_end(key)
                return (prepared, variables), None
        literals = string_literals(query)
        if literals is None:
            return None, None
        return self.shapes.find(literals, operation_name, variables), literals

    def _prepare_shape(
        self,
        query: str,
        operation_name: str | None,
        variables: dict[str, Any] | None,
        context: Context,
        literals: StringLiterals,
    ) -> tuple[_Prepared, dict[str, Any]] | None:
        """The document as variables, prepared for its shape, and the variables to run it
        with; None (the document to be prepared alone) where it is not answered so."""
        document = as_variables(query, operation_name, literals)
        merged = with_strings(variables, literals.values)
        prepared = None
        if document is not None:
            rules = rules_for(query, marked="$")
            prepared = self._prepare_parsed(
                document, rules, operation_name, merged, context, priced=False
            )
        if prepared is None or prepared.plan is None:
            self.shapes.keep(literals, operation_name, None)
            return None
        self.shapes.keep(literals, operation_name, prepared)
        return prepared, merged

    def _prepare_new(
        self,
        query: str,
        operation_name: str | None,
        variables: dict[str, Any] | None,
        context: Context,
    ) -> _Prepared | None:
        """Parse, then `_prepare_parsed`."""
        try:
            # Without locations: a plan reports no errors (the stock path parses again).
            document = parse(query, max_tokens=MAX_TOKENS, no_location=True)
        except GraphQLError:
            return _INVALID
        return self._prepare_parsed(document, rules_for(query), operation_name, variables, context)

    def _prepare_parsed(
        self,
        document: DocumentNode,
        rules: tuple[type[ASTValidationRule], ...],
        operation_name: str | None,
        variables: dict[str, Any] | None,
        context: Context,
        *,
        priced: bool = True,
    ) -> _Prepared | None:
        """Price (before validation, as the stock path does), validate, compile; None
        when `priced` and the price is over the limit (with these variables: perhaps not
        with others). A shape is not priced here: each request is, in `ready`."""
        operation = _operation(document, operation_name)
        if operation is None:
            return _INVALID
        fragments = {
            d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
        }
        prepared = _Prepared("compiled", operation, fragments)
        prepared.variable_names = tuple(
            d.variable.name.value for d in operation.variable_definitions or ()
        )
        if priced and self._within_cost(prepared, variables, context) is None:
            return None
        if validate_document(self.schema, document, rules):
            return _INVALID
        query_type = self.schema.query_type
        if query_type is None:
            return _UNCOVERED
        prepared.plan = compile_operation(query_type, operation, fragments, self.converter)
        if prepared.plan is not None:
            prepared.reads = Reads(self.schema, query_type, operation, fragments, self.converter)
            prepared.as_given = VariablesAsGiven.of(self.schema, operation)
        # Kept with its price: a first answer is not priced again.
        return _UNCOVERED if prepared.plan is None else prepared

    def _within_cost(
        self, prepared: _Prepared, variables: dict[str, Any] | None, context: Context
    ) -> int | None:
        """The operation's price, None when over the limit."""
        assert prepared.operation is not None and prepared.fragments is not None
        limits = (size_bounds(context.store), context.max_first)
        key = price_key(variables, prepared.variable_names)
        # Read once: another thread may start a new table for other bounds meanwhile, and
        # a price must only ever go into the table of the bounds it was measured with.
        table = prepared.prices
        if table is not None and table[0][0] is limits[0] and table[0][1] == limits[1]:
            prices = table[1]
        else:
            prices = {}
            prepared.prices = (limits, prices)
        cost = prices.get(key) if key is not None else None
        if cost is not None:
            return cost
        measured = price(
            self.schema, prepared.operation, prepared.fragments, variables or {}, *limits
        )
        if measured.refusal(self.max_cost) is not None:
            return None
        if key is not None:
            if len(prices) >= PRICES_KEPT:
                prices.clear()
            prices[key] = measured.cost
        return measured.cost


def _operation(document: DocumentNode, name: str | None) -> OperationDefinitionNode | None:
    """The operation to run: the one named, or the only one."""
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if name is None:
        return operations[0] if len(operations) == 1 else None
    named = [o for o in operations if o.name is not None and o.name.value == name]
    return named[0] if len(named) == 1 else None


def _declined(execution: str, renew_budget: bool = False) -> Answer:
    STATS[execution] += 1
    return Answer(execution, renew_budget=renew_budget)
