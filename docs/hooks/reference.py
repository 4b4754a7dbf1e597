"""MkDocs hook: the GraphQL reference page, rendered from the SDL at build time.

`docs/reference/graphql.md` holds only a title and a marker (so that the page exists for
the nav and for links, also on GitHub); its Markdown is replaced here by
`cachegql.schema.reference.render_reference` of `schema/schema.graphql`, so the
reference cannot go stale: `tests/test_docs.py` checks the built page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cachegql.schema.reference import render_reference

PAGE = "reference/graphql.md"
SDL = Path(__file__).resolve().parents[2] / "schema" / "schema.graphql"


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """The reference page's Markdown, generated; every other page as it is."""
    if page.file.src_uri != PAGE:
        return markdown
    return render_reference(SDL.read_text(encoding="utf-8"))


def on_config(config: Any, **_: Any) -> Any:
    """Rebuild on `mkdocs serve` when the SDL changes (`make schema`)."""
    config.watch.append(str(SDL))
    return config
