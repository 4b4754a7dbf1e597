"""GraphiQL at GET /graphql, served by cachegql itself, used in a real browser.

The real app on a real uvicorn (127.0.0.1), opened in Debian's Chromium driven by
Playwright (tests/browser.py). Every request to another origin is aborted and recorded, and
each test asserts that the page attempted none: the playground must work where no CDN can be
reached. Screenshots go to $CACHEGQL_SCREENSHOTS (default: the test's tmp_path).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect

from cachegql.server import playground
from cachegql.server.app import Settings, create_app
from tests.browser import LOAD_MS, WAIT_MS, Tab, open_tab, screenshots_root
from tests.conftest import LiveServer

EDITOR = ".graphiql-query-editor .CodeMirror"
RESULT = ".graphiql-response .result-window"
DOCS = ".graphiql-doc-explorer"
HINTS = "ul.CodeMirror-hints"
# The query a user types, key by key. The editor closes brackets itself: a typed `}` steps
# over the one it inserted, so the text ends up exactly as typed.
QUERY = '{ tags { name isDefault } specs(query: "zlib") { totalCount } }'


@pytest.fixture(scope="module")
def server(pages_index: Path) -> Iterator[str]:
    """The real app on the test pages, served by uvicorn: its base URL."""
    app = create_app(Settings(index=pages_index, reload_interval=0))
    with LiveServer(app) as url:
        yield url


class Playground(Tab):
    """A browser tab on the playground."""

    def editor_text(self) -> str:
        text: str = self.page.locator(EDITOR).evaluate("(e) => e.CodeMirror.getValue()")
        return text

    def clear_and_type(self, text: str) -> None:
        """Focus the query editor, select everything, delete it, type `text` key by key."""
        self.page.locator(EDITOR).click()
        self.page.keyboard.press("Control+A")
        self.page.keyboard.press("Delete")
        assert self.editor_text() == ""
        self.page.keyboard.type(text, delay=5)


@pytest.fixture
def playground_tab(
    browser: Browser, server: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Playground]:
    """A fresh context (no stored GraphiQL state) with the playground loaded and ready."""
    with open_tab(browser, server, screenshots_root(request, tmp_path)) as opened:
        tab = Playground(opened.page, opened.origin, opened.shots, opened.foreign, opened.errors)
        page = tab.page
        # GraphiQL reads the schema (introspection, a POST) once loaded: hints, docs and
        # validation need it, and a slow machine could type before it arrives.
        with page.expect_response(
            lambda answer: (
                answer.request.method == "POST" and "__schema" in (answer.request.post_data or "")
            ),
            timeout=LOAD_MS,
        ):
            page.goto(server + "/graphql", wait_until="load")
        # React replaced "Loading..." with GraphiQL's editors.
        expect(page.locator(EDITOR)).to_be_visible()
        expect(page.locator("#graphiql")).not_to_contain_text("Loading...")
        yield tab


def test_page_loads_only_its_own_assets(server: str) -> None:
    html = playground.page()
    urls = re.findall(r'(?:src|href)="([^"]*)"', html)
    assert [u for u in urls if u != "data:,"] == [
        f"{playground.STATIC_PATH}/{asset}" for asset in playground.ASSETS
    ]
    assert "://" not in html  # no other origin, not even in the inline script
    with httpx.Client(base_url=server, timeout=10) as client:
        served = client.get("/graphql", headers={"accept": "text/html"})
        assert served.status_code == 200
        assert served.text == html
        for asset in playground.ASSETS:
            response = client.get(f"{playground.STATIC_PATH}/{asset}")
            assert response.status_code == 200, asset
            assert response.content == (playground.STATIC_DIR / asset).read_bytes()
            assert response.headers["cache-control"] == playground.IMMUTABLE
            etag = response.headers["etag"]
            again = client.get(f"{playground.STATIC_PATH}/{asset}", headers={"if-none-match": etag})
            assert again.status_code == 304
            # Each package's licence ships beside its files.
            assert (playground.STATIC_DIR / asset).with_name("LICENSE").is_file()
        assert client.get(f"{playground.STATIC_PATH}/graphiql/nope.js").status_code == 404
        assert client.get(f"{playground.STATIC_PATH}/../playground.py").status_code == 404
        # Only GraphiQL's folder: the front end's files have their own URLs (test_frontend).
        assert client.get(f"{playground.STATIC_PATH}/app/main.js").status_code == 404


def test_no_request_may_leave_the_origin(playground_tab: Playground) -> None:
    """The guard itself: a request to another host is aborted and recorded."""
    probe = "http://127.0.0.2:9/probe.js"
    failed = playground_tab.page.evaluate(
        "([url, ms]) => fetch(url, { signal: AbortSignal.timeout(ms) }).then(() => 0, () => 1)",
        [probe, WAIT_MS],
    )
    assert failed == 1
    assert playground_tab.foreign == [probe]
    # Chromium reports the aborted request on the console.
    assert len(playground_tab.errors) == 1
    assert "net::ERR_BLOCKED_BY_CLIENT" in playground_tab.errors[0]
    playground_tab.foreign.clear()
    playground_tab.errors.clear()
    playground_tab.assert_clean()


def test_query_typed_and_run_shows_the_data(playground_tab: Playground) -> None:
    page = playground_tab.page
    playground_tab.clear_and_type(QUERY)
    assert playground_tab.editor_text() == QUERY
    page.keyboard.press("Shift+Control+P")  # prettify: one field a line
    expect(page.locator(EDITOR)).to_contain_text("isDefault")
    assert playground_tab.editor_text().startswith("{\n  tags {\n    name\n    isDefault\n")
    page.keyboard.press("Escape")  # closes a completion list, if one opened
    expect(page.locator(HINTS)).to_be_hidden()
    page.keyboard.press("Control+Enter")
    result = page.locator(RESULT)
    expect(result).to_contain_text('"data"')
    expect(result).to_contain_text('"name": "develop"')
    expect(result).to_contain_text('"isDefault": true')
    expect(result).to_contain_text('"totalCount": 3')
    expect(result).not_to_contain_text('"errors"')
    playground_tab.screenshot("query")
    # The run button does the same.
    page.get_by_label("Execute query (Ctrl-Enter)").click()
    expect(result).to_contain_text('"totalCount": 3')
    playground_tab.assert_clean()


def test_docs_explorer_lists_query_and_its_fields(playground_tab: Playground) -> None:
    page = playground_tab.page
    page.get_by_label("Show Documentation Explorer").click()
    docs = page.locator(DOCS)
    expect(docs).to_be_visible()
    expect(docs).not_to_contain_text("Error fetching schema")
    root = docs.locator("a.graphiql-doc-explorer-type-name", has_text=re.compile(r"^Query$"))
    expect(root).to_be_visible()
    root.click()
    expect(docs.locator(".graphiql-doc-explorer-title")).to_have_text("Query")
    for name in ("tags", "specs", "spec", "stacks"):
        exact = re.compile(f"^{name}$")
        field_link = docs.locator(".graphiql-doc-explorer-field-name", has_text=exact)
        expect(field_link).to_be_visible()
    playground_tab.screenshot("docs")
    docs.locator(".graphiql-doc-explorer-field-name", has_text=re.compile("^tags$")).click()
    expect(docs.locator(".graphiql-doc-explorer-title")).to_have_text("tags")
    expect(docs).to_contain_text("Every snapshot (tag) of the build cache")
    playground_tab.assert_clean()


def test_autocomplete_offers_fields_while_typing(playground_tab: Playground) -> None:
    page = playground_tab.page
    playground_tab.clear_and_type("{ sta")
    hints = page.locator(HINTS)
    expect(hints).to_be_visible()
    expect(hints.locator("li.CodeMirror-hint", has_text=re.compile(r"^stacks$"))).to_be_visible()
    expect(hints.locator("li.CodeMirror-hint", has_text=re.compile(r"^stack$"))).to_be_visible()
    playground_tab.screenshot("autocomplete")
    # Arrow to `stacks` and take it: the editor now holds the field's name.
    for _ in range(10):
        if page.locator("li.CodeMirror-hint-active").inner_text() == "stacks":
            break
        page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    expect(hints).to_be_hidden()
    assert playground_tab.editor_text().startswith("{ stacks")
    playground_tab.assert_clean()


def test_explorer_plugin_adds_a_clicked_field_to_the_query(playground_tab: Playground) -> None:
    page = playground_tab.page
    page.get_by_label("Show GraphiQL Explorer").click()
    explorer = page.locator(".graphiql-explorer-root")
    stacks = explorer.locator('[data-field-name="stacks"]').first
    expect(stacks).to_be_visible()
    assert "stacks" not in playground_tab.editor_text()
    stacks.click()
    expect(page.locator(EDITOR)).to_contain_text("stacks")
    playground_tab.assert_clean()
