"""The API's small value types: tags, compilers, variants, counts, and a page's info."""

from __future__ import annotations

import strawberry

from cachegql.schema.pagination import Window

__all__ = ["Bucket", "Compiler", "PageInfo", "StackCount", "Tag", "Variant", "page_info"]


@strawberry.type
class Tag:
    name: str
    num_packages: int
    num_specs: int
    is_default: bool


@strawberry.type
class Compiler:
    name: str
    version: str | None
    raw: str


@strawberry.type
class Variant:
    name: str
    value: str = strawberry.field(
        description='"true"/"false" for +x/~x; "80" or "70,80" for key=value forms.'
    )
    raw: str = strawberry.field(description="Exactly as on the page.")


@strawberry.type
class Bucket:
    value: str
    count: int


@strawberry.type
class StackCount:
    stack: str
    count: int


@strawberry.type
class PageInfo:
    has_next_page: bool
    has_previous_page: bool
    start_cursor: str | None
    end_cursor: str | None


def page_info(page: Window) -> PageInfo:
    empty = page.stop <= page.start
    return PageInfo(
        has_next_page=page.has_next,
        has_previous_page=page.has_previous,
        start_cursor=None if empty else page.cursor(page.start),
        end_cursor=None if empty else page.cursor(page.stop - 1),
    )
