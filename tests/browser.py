"""A real browser for tests: Debian's Chromium driven by Playwright, kept to one origin.

Every request to another origin (and every WebSocket: cachegql serves none) is aborted and
recorded, console errors and uncaught exceptions are recorded, and `Tab.assert_clean` says
that there were none. Screenshots go to $CACHEGQL_SCREENSHOTS (default: the test's tmp_path),
in a folder named after the test.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import (
    Browser,
    ConsoleMessage,
    Page,
    Route,
    ViewportSize,
    WebSocketRoute,
)

from tests.conftest import skip_unless_ci

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
WAIT_MS = 5_000  # any one element or answer
LOAD_MS = 10_000  # a page and its assets
DESKTOP: ViewportSize = {"width": 1280, "height": 800}
PHONE: ViewportSize = {"width": 375, "height": 812}


def chromium_or_skip() -> Path:
    """Debian's Chromium, or skip (but fail under CI, which must install it: .ci/run)."""
    if CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    skip_unless_ci(f"browser tests: {CHROMIUM} not found (apt-get install chromium)")


def screenshots_root(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """Where a test's screenshots go: $CACHEGQL_SCREENSHOTS/<test> or its tmp_path."""
    root = os.environ.get("CACHEGQL_SCREENSHOTS")
    return Path(root) / request.node.name if root else tmp_path


@dataclass
class Tab:
    """A browser tab on the server at `origin`, and what it attempted that it should not have."""

    page: Page
    origin: str
    shots: Path
    foreign: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def screenshot(self, name: str, full_page: bool = False) -> Path:
        self.shots.mkdir(parents=True, exist_ok=True)
        path = self.shots / f"{name}.png"
        self.page.screenshot(path=path, timeout=WAIT_MS, full_page=full_page)
        return path

    def assert_clean(self) -> None:
        """No request left the server's origin, and no script failed."""
        assert self.foreign == [], f"the page tried to reach other origins: {self.foreign}"
        assert self.errors == [], f"errors in the page: {self.errors}"


@contextlib.contextmanager
def open_tab(
    browser: Browser,
    origin: str,
    shots: Path,
    viewport: ViewportSize = DESKTOP,
    permissions: tuple[str, ...] = (),
) -> Iterator[Tab]:
    """A tab in a fresh context (no cache, no stored state) that may reach `origin` only."""
    context = browser.new_context(viewport=viewport)
    context.set_default_timeout(WAIT_MS)
    context.set_default_navigation_timeout(LOAD_MS)
    if permissions:
        context.grant_permissions(list(permissions), origin=origin)
    page = context.new_page()
    tab = Tab(page, origin, shots)

    def only_same_origin(route: Route) -> None:
        url = route.request.url
        if url == origin or url.startswith(origin + "/"):
            route.continue_()
        else:
            tab.foreign.append(url)
            route.abort("blockedbyclient")

    def no_foreign_sockets(ws: WebSocketRoute) -> None:
        tab.foreign.append(ws.url)
        ws.close()

    def console(message: ConsoleMessage) -> None:
        if message.type == "error":
            tab.errors.append(f"console: {message.text}")

    context.route("**/*", only_same_origin)
    context.route_web_socket(re.compile(".*"), no_foreign_sockets)
    page.on("console", console)
    page.on("pageerror", lambda exc: tab.errors.append(f"uncaught: {exc}"))
    try:
        yield tab
    finally:
        context.close()
