"""The scalar fields of a spec, declared once.

Each row says how a spec field is stored and what it offers: a filter under its
name, a facet, a per-stack bucket. An empty value means "the source does not say"
(pages record no namespace): no filter operator matches it and no facet counts it.
Every list of spec fields in the index is derived from `SPEC_FIELDS`: the columns
ingest collects and the build writes, the columns a snapshot loads, the filters the
planner knows, the facets, the stack buckets, and the summaries a page's `meta` is
checked against (a page's `meta` uses the facet names).

Adding a filterable, faceted field is one row here plus its attribute on `SpecRecord`
(`index/records.py`), the source that fills it, and its declarations in `schema/`
(a test checks those against this table).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from typing import Literal

from cachegql.index.records import SpecRecord

__all__ = [
    "BUCKET_FIELDS",
    "FACETS",
    "FIELDS_BY_NAME",
    "SPEC_FIELDS",
    "STACKS_FACET",
    "SpecField",
]


@dataclass(frozen=True, slots=True)
class SpecField:
    """One single-valued spec field: a stored column, filterable by `StringMatch`."""

    name: str
    """Its column, its criteria key and the `SpecFilter` input field of the same name."""
    value: Callable[[SpecRecord], str]
    """Its text for one spec."""
    facet: str | None = None
    """Its facet on `SpecConnection.facets` (also its key in a page's `meta`), if any."""
    bucket: bool = False
    """Counted per stack too (`Stack.compilers`, ...), under the facet's name."""
    order: Literal["text", "version"] = "text"
    """How its distinct values are ordered: by text, or by Spack's version order."""
    attribute: bool = False
    """The value is the `SpecRecord` attribute of the same name, read back from the column."""
    required: bool = True
    """Every source has it; else an empty value means the source records none."""


SPEC_FIELDS: tuple[SpecField, ...] = (
    SpecField("package", attrgetter("package"), facet="packages", attribute=True),
    SpecField("version", attrgetter("version"), facet="versions", order="version"),
    SpecField("compiler", lambda spec: spec.compiler.normalized, facet="compilers", bucket=True),
    SpecField("compiler_name", lambda spec: spec.compiler.name),
    SpecField("os", attrgetter("os"), facet="oss", bucket=True, attribute=True),
    SpecField("platform", attrgetter("platform"), facet="platforms", bucket=True, attribute=True),
    SpecField("target", attrgetter("target"), facet="targets", bucket=True, attribute=True),
    SpecField(
        "namespace", attrgetter("namespace"), facet="namespaces", attribute=True, required=False
    ),
)
FIELDS_BY_NAME = {field.name: field for field in SPEC_FIELDS}
# The one facet over a set-valued column: a spec counts once for each of its stacks.
STACKS_FACET = "stacks"
FACETS: dict[str, str | None] = {
    **{field.facet: field.name for field in SPEC_FIELDS if field.facet},
    STACKS_FACET: None,
}
"""Every facet name, with the single-valued field it counts (None: the stacks)."""
BUCKET_FIELDS = tuple(field for field in SPEC_FIELDS if field.bucket)
