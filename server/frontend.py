"""The web front end at / : search, package, spec, stack and changes pages over the public API.

Hand-written ES modules and one stylesheet in `static/app/`, served as they are (no bundler,
no build step at install) by the same mechanism as GraphiQL's files (`assets.Assets`). Their
URL carries a digest of the folder (`/app/<digest>/main.js`), so browsers cache them as
immutable and a new release is fetched at once. The HTML is the same for every client-side
route (the scripts read the URL), revalidated by its ETag; its Content-Security-Policy lets
the page load and ask nothing outside its own origin.
"""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from cachegql.server.assets import STATIC_DIR, Assets, digest

__all__ = ["APP_DIR", "PAGE_PATHS", "SECURITY_HEADERS", "Frontend"]

APP_DIR = STATIC_DIR / "app"
# Every path the app draws itself (static/app/router.js has the same list): each answers
# with the same HTML, so a shared link or a reload lands on its page.
PAGE_PATHS = (
    "/",
    "/package/{name}",
    "/spec/{hash}",
    "/stacks",
    "/stack/{name}",
    "/changes",
    "/check",
)
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}

_PAGE = """\
<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>cachegql</title>
    <link rel="icon" href="data:,">
    <link rel="stylesheet" href="%(static)s/app.css">
%(preloads)s
    <script type="module" src="%(static)s/main.js"></script>
  </head>
  <body>
    <a class="skip" href="#main">Skip to content</a>
    <header class="top">
      <a class="brand" href="/">cachegql</a>
      <nav aria-label="Main">
        <a href="/">Search</a>
        <a href="/stacks">Stacks</a>
        <a href="/changes">Changes</a>
        <a href="/check">Check</a>
        <a href="/graphql">GraphiQL</a>
      </nav>
      <div class="controls">
        <span class="field">
          <label for="tag">Tag</label> <select id="tag" name="tag"></select>
        </span>
        <span class="field">
          <label for="runs-on">Runs on</label>
          <select id="runs-on" name="runsOn"><option value="">any target</option></select>
        </span>
        <form id="hash-form" class="field" role="search" aria-label="Spec by hash">
          <label for="hash">Hash</label>
          <input id="hash" name="hash" placeholder="/22xi27u" autocomplete="off"
                 autocapitalize="off" spellcheck="false">
          <button type="submit">Open</button>
        </form>
      </div>
    </header>
    <main id="main" tabindex="-1"><p class="muted">Loading...</p></main>
    <div id="status" class="visually-hidden" role="status" aria-live="polite"></div>
    <footer class="foot">
      Keys: <kbd>/</kbd> search, <kbd>#</kbd> hash, <kbd>&darr;</kbd> <kbd>&uarr;</kbd> results.
      Data from the public <a href="/graphql">GraphQL API</a>.
    </footer>
    <noscript>This page needs JavaScript; the API is at <a href="/graphql">/graphql</a>.</noscript>
  </body>
</html>
"""


def modules(folder: Path = APP_DIR) -> list[str]:
    """The app's scripts, relative to its folder: all preloaded, so that the browser fetches
    them in one round instead of one level of imports at a time."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.js"))


class Frontend:
    """The app's HTML for each of its paths, and its files under a digest of them."""

    def __init__(self, folder: Path = APP_DIR) -> None:
        self.folder = folder
        self.version = digest(folder)
        self.static_path = f"/app/{self.version}"
        preloads = "\n".join(
            f'    <link rel="modulepreload" href="{self.static_path}/{m}">'
            for m in modules(folder)
            if m != "main.js"
        )
        self.html = _PAGE % {"static": self.static_path, "preloads": preloads}
        self.etag = f'"{self.version}"'

    async def page(self, request: Request) -> Response:
        headers = {**SECURITY_HEADERS, "ETag": self.etag, "Cache-Control": "no-cache"}
        if self.etag in request.headers.get("if-none-match", ""):
            return Response(status_code=304, headers=headers)
        return HTMLResponse(self.html, headers=headers)

    def routes(self) -> list[BaseRoute]:
        assets = Assets(self.folder, immutable=lambda _: True)
        return [
            *(Route(path, self.page, methods=["GET", "HEAD"]) for path in PAGE_PATHS),
            Mount(self.static_path, app=assets, name="frontend-static"),
        ]
