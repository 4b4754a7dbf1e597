"""The documentation site as a reader sees it: Debian's Chromium on the built site, offline.

The strict build (tests/test_docs.py) proves the pages and links exist; this proves they
render: the navigation and the generated GraphQL reference show, the site's search answers
from its own index, and nothing is fetched from another origin (no web fonts, no CDN) nor
fails in a script.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.browser import open_tab, screenshots_root
from tests.http_fixture import ResetTolerantServer

SEARCH_MS = 30_000


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site_origin(docs_site: Path) -> Iterator[str]:
    """The site built strictly into a temporary folder, served on 127.0.0.1 for the module."""
    handler = functools.partial(_QuietHandler, directory=str(docs_site))
    server = ResetTolerantServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_the_home_page_renders_its_navigation_offline(
    browser: Browser, site_origin: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    with open_tab(browser, site_origin, screenshots_root(request, tmp_path)) as tab:
        tab.page.goto(site_origin + "/", wait_until="load")
        navigation = tab.page.locator("nav.md-nav--primary")
        for section in ("Getting started", "Indexing", "Querying", "Architecture"):
            expect(navigation).to_contain_text(section)
        tab.screenshot("docs-home")
        tab.assert_clean()


def test_the_graphql_reference_is_generated_into_the_page(
    browser: Browser, site_origin: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    with open_tab(browser, site_origin, screenshots_root(request, tmp_path)) as tab:
        tab.page.goto(site_origin + "/reference/graphql/", wait_until="load")
        article = tab.page.locator("article")
        # A type, a field with its arguments, and a description from the schema.
        expect(article.locator('[id="Query"]')).to_have_count(1)
        expect(article.locator('[id="Query.specs(first:)"]')).to_have_count(1)
        expect(article).to_contain_text("SpecFilter")
        tab.assert_clean()


def test_the_search_answers_from_the_sites_own_index(
    browser: Browser, site_origin: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    with open_tab(browser, site_origin, screenshots_root(request, tmp_path)) as tab:
        tab.page.goto(site_origin + "/", wait_until="load")
        tab.page.locator("label.md-search__icon, .md-search__input").first.click()
        tab.page.locator("input.md-search__input").press_sequentially("incremental", delay=20)
        # The search's worker indexes the whole site first: seconds on a loaded machine.
        results = tab.page.locator(".md-search-result__list")
        expect(results).to_contain_text("Incremental", timeout=SEARCH_MS)
        tab.screenshot("docs-search")
        tab.assert_clean()
