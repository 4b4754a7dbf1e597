"""The output types of the API: plain strawberry dataclasses with thin resolvers.

One module per domain, gathered here for the rest of the schema: `value_types` (tags,
compilers, variants, counts, page info), `facet_types` (a result's facets),
`spec_types` (specs, their dependencies and package, pages of specs), `package_types`
(pages of packages) and `stack_types` (stacks).
"""

from cachegql.schema.facet_types import FACET_FIRST, SpecFacets
from cachegql.schema.package_types import PackageConnection, PackageEdge, package_connection
from cachegql.schema.spec_types import (
    Dependency,
    Package,
    Spec,
    SpecBatch,
    SpecConnection,
    SpecEdge,
    package_object,
    spec_connection,
    spec_object,
    spec_objects,
    spec_page,
)
from cachegql.schema.stack_types import Stack, stack_object
from cachegql.schema.value_types import (
    Bucket,
    Compiler,
    PageInfo,
    StackCount,
    Tag,
    Variant,
    page_info,
)

__all__ = [
    "FACET_FIRST",
    "Bucket",
    "Compiler",
    "Dependency",
    "Package",
    "PackageConnection",
    "PackageEdge",
    "PageInfo",
    "Spec",
    "SpecBatch",
    "SpecConnection",
    "SpecEdge",
    "SpecFacets",
    "Stack",
    "StackCount",
    "Tag",
    "Variant",
    "package_connection",
    "package_object",
    "page_info",
    "spec_connection",
    "spec_object",
    "spec_objects",
    "spec_page",
    "stack_object",
]
