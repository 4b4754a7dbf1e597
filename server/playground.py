"""The GraphiQL playground at GET /graphql (for browsers), from assets that ship with cachegql.

The page loads GraphiQL 3 (its UMD build, with the docs explorer and autocompletion), React 18
and GraphiQL's explorer plugin from `static/graphiql/` beside this module (see its README.md:
the versions, where they come from, how to update them), served at `/graphql/static/graphiql/`
by `assets.Assets`. No request leaves the server's origin, so the playground works where no CDN
can be reached. Each package's folder is named with its version, so its files are cached as
immutable.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from starlette.routing import BaseRoute, Mount

from cachegql.server.assets import IMMUTABLE, STATIC_DIR, Assets

__all__ = ["ASSETS", "GRAPHQL_PATH", "IMMUTABLE", "STATIC_DIR", "STATIC_PATH", "page", "routes"]

GRAPHQL_PATH = "/graphql"
STATIC_PATH = "/graphql/static"

REACT_VERSION = "18.3.1"
GRAPHIQL_VERSION = "3.9.0"
EXPLORER_VERSION = "3.2.6"

_STYLES = (
    f"graphiql/graphiql-{GRAPHIQL_VERSION}/graphiql.min.css",
    f"graphiql/plugin-explorer-{EXPLORER_VERSION}/style.css",
)
# In this order: graphiql.min.js needs window.React and window.ReactDOM, the explorer
# plugin needs window.GraphiQL.
_SCRIPTS = (
    f"graphiql/react-{REACT_VERSION}/react.production.min.js",
    f"graphiql/react-dom-{REACT_VERSION}/react-dom.production.min.js",
    f"graphiql/graphiql-{GRAPHIQL_VERSION}/graphiql.min.js",
    f"graphiql/plugin-explorer-{EXPLORER_VERSION}/index.umd.js",
)
ASSETS = _STYLES + _SCRIPTS
"""The files the page loads, relative to STATIC_DIR (and to STATIC_PATH)."""

# A folder named NAME-X.Y.Z holds one version of one package: its files never change.
_VERSIONED_FOLDER = re.compile(r"-\d+\.\d+\.\d+$")

DEFAULT_QUERY = """\
# cachegql: Spack build caches
#
# Ctrl-Enter: run the query
# Ctrl-Space: complete a name
# Docs: the book icon, top left
{
  tags {
    name
    numSpecs
  }
  specs(query: "zlib", first: 5) {
    totalCount
    nodes {
      shortHash
      format
    }
  }
}
"""

# GraphiQL's own fetcher posts JSON to GRAPHQL_PATH; plain JSON answers (no incremental
# delivery, which cachegql does not serve) and no subscription socket.
_BOOT = """\
const fetcher = GraphiQL.createFetcher({
  url: %(url)s,
  headers: %(headers)s,
  enableIncrementalDelivery: false,
});
const explorer = GraphiQLPluginExplorer.explorerPlugin();
const root = ReactDOM.createRoot(document.getElementById("graphiql"));
root.render(
  React.createElement(GraphiQL, {
    fetcher: fetcher,
    defaultQuery: %(query)s,
    plugins: [explorer],
    defaultEditorToolsVisibility: true,
    isHeadersEditorEnabled: true,
    shouldPersistHeaders: false,
    inputValueDeprecation: true,
  }),
);
"""

_PAGE = """\
<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>cachegql GraphiQL</title>
    <link rel="icon" href="data:,">
    <style>
      body { height: 100%%; margin: 0; width: 100%%; overflow: hidden; }
      #graphiql { height: 100vh; }
    </style>
%(styles)s
  </head>
  <body>
    <div id="graphiql">Loading...</div>
%(scripts)s
    <script>
%(boot)s    </script>
  </body>
</html>
"""


def _script_literal(value: object) -> str:
    """`value` as a JavaScript literal that is safe inside a <script> element."""
    return json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e")


def page() -> str:
    """The HTML of the playground: same-origin assets only, GraphiQL querying /graphql."""
    boot = _BOOT % {
        "url": _script_literal(GRAPHQL_PATH),
        "headers": _script_literal({"Accept": "application/json"}),
        "query": _script_literal(DEFAULT_QUERY),
    }
    styles = "\n".join(f'    <link rel="stylesheet" href="{STATIC_PATH}/{a}">' for a in _STYLES)
    scripts = "\n".join(f'    <script src="{STATIC_PATH}/{a}"></script>' for a in _SCRIPTS)
    return _PAGE % {"styles": styles, "scripts": scripts, "boot": boot}


def _versioned(path: Path) -> bool:
    return _VERSIONED_FOLDER.search(path.parent.name) is not None


def routes() -> list[BaseRoute]:
    """The routes of the playground's assets: STATIC_DIR/graphiql at STATIC_PATH/graphiql."""
    assets = Assets(STATIC_DIR / "graphiql", immutable=_versioned)
    return [Mount(f"{STATIC_PATH}/graphiql", app=assets, name="playground-static")]
