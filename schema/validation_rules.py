"""Which of graphql-core's validation rules can report anything on a document.

A prepared plan validates its document once (`direct`), with graphql-core's specified
rules, but only those that can say something about it: a rule about variables,
fragments or directives has nothing to report on a document without any.
"""

from __future__ import annotations

from graphql import specified_rules
from graphql.validation import (
    ASTValidationRule,
    DeferStreamDirectiveLabel,
    DeferStreamDirectiveOnRootField,
    DeferStreamDirectiveOnValidOperationsRule,
    FragmentsOnCompositeTypesRule,
    KnownDirectivesRule,
    KnownFragmentNamesRule,
    NoFragmentCyclesRule,
    NoUndefinedVariablesRule,
    NoUnusedFragmentsRule,
    NoUnusedVariablesRule,
    PossibleFragmentSpreadsRule,
    StreamDirectiveOnListField,
    UniqueDirectivesPerLocationRule,
    UniqueFragmentNamesRule,
    UniqueVariableNamesRule,
    VariablesAreInputTypesRule,
    VariablesInAllowedPositionRule,
)

__all__ = ["RULES_NEEDING", "rules_for"]

RULES_NEEDING: tuple[tuple[tuple[str, ...], frozenset[type[ASTValidationRule]]], ...] = (
    (
        ("$",),
        frozenset(
            {
                UniqueVariableNamesRule,
                NoUndefinedVariablesRule,
                NoUnusedVariablesRule,
                VariablesAreInputTypesRule,
                VariablesInAllowedPositionRule,
            }
        ),
    ),
    (
        ("...", "fragment"),
        frozenset(
            {
                UniqueFragmentNamesRule,
                KnownFragmentNamesRule,
                NoUnusedFragmentsRule,
                PossibleFragmentSpreadsRule,
                NoFragmentCyclesRule,
                FragmentsOnCompositeTypesRule,
            }
        ),
    ),
    (
        ("@",),
        frozenset(
            {
                KnownDirectivesRule,
                UniqueDirectivesPerLocationRule,
                DeferStreamDirectiveLabel,
                DeferStreamDirectiveOnRootField,
                DeferStreamDirectiveOnValidOperationsRule,
                StreamDirectiveOnListField,
            }
        ),
    ),
)
"""Validation rules that can only report on variables, fragments or directives, with the
text that each of those needs (`$`, `...` or `fragment`, `@`). A document without that
text has none of them, and skipping these rules cannot change its verdict; it takes
half the time of validating a document such as `bench/run.py`'s `selective_page`."""


def rules_for(query: str, marked: str = "") -> tuple[type[ASTValidationRule], ...]:
    """The validation rules that can report anything on `query` (`RULES_NEEDING`), or on
    it once it has the `marked` text too (a document rewritten with variables, "$")."""
    skipped: set[type[ASTValidationRule]] = set()
    for markers, rules in RULES_NEEDING:
        if not any(marker in query or marker in marked for marker in markers):
            skipped |= rules
    return tuple(rule for rule in specified_rules if rule not in skipped)
