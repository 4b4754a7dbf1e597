"""The import contract: each layer imports only what its place in the architecture allows.

Every import statement of the production code is read from the source (imports inside
functions too) and checked against the rules below, declared once as a table. And each
module stays small enough to hold one idea: at most `MAX_MODULE_LINES` lines.
"""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The installed package `cachegql.<layer>` is the folder `<layer>/`.
LAYERS = ("demo", "index", "schema", "server")
GRAPHQL = ("graphql", "strawberry")
HTTP = ("starlette", "uvicorn", "httpx", "strawberry.asgi", "strawberry.http")
# The writing side of the index and its reading side: reading never goes through writing.
INDEX_WRITE = (
    "cachegql.index.build",
    "cachegql.index.ingest",
    "cachegql.index.disk.write",
    "cachegql.index.disk.publish",
)
INDEX_READ = (
    "cachegql.index.disk.columns",
    "cachegql.index.disk.dictionary",
    "cachegql.index.disk.package_data",
    "cachegql.index.disk.snapshot",
    "cachegql.index.disk.store",
    "cachegql.index.disk.tag_files",
    "cachegql.index.disk.text",
    "cachegql.index.query",
)

# A module over this many lines holds more than one idea: split it along its seams.
MAX_MODULE_LINES = 400


@dataclass(frozen=True)
class Rule:
    """Modules under one of `importers` must not import a module under one of `forbidden`,
    except those under one of `allowed`."""

    name: str
    importers: tuple[str, ...]
    forbidden: tuple[str, ...]
    allowed: tuple[str, ...] = ()


RULES = (
    Rule(
        "the index knows nothing of GraphQL, HTTP, or the layers above it",
        ("cachegql.index",),
        (*GRAPHQL, *HTTP, "cachegql.schema", "cachegql.server", "cachegql.demo"),
    ),
    Rule(
        "the schema knows nothing of HTTP or the server",
        ("cachegql.schema",),
        (*HTTP, "cachegql.server", "cachegql.demo"),
    ),
    Rule(
        "schema/ and server/ use the index only through its front door, cachegql.index",
        ("cachegql.schema", "cachegql.server"),
        ("cachegql.index.",),
    ),
    Rule(
        "server/ uses the schema only through its front door, cachegql.schema",
        ("cachegql.server",),
        ("cachegql.schema.",),
    ),
    Rule("reading an index never imports the writing side", INDEX_READ, INDEX_WRITE),
    Rule(
        "Spack's vocabulary stands alone",
        ("cachegql.index.spack",),
        ("cachegql.",),
        ("cachegql.index.spack", "cachegql.index.errors"),
    ),
    Rule(
        "the demo data generator is a plain page writer",
        ("cachegql.demo",),
        ("cachegql.",),
        ("cachegql.demo",),
    ),
    Rule("nothing imports the folders by their bare names", ("cachegql",), LAYERS),
)


def _under(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(
        module == p or module.startswith(p if p.endswith(".") else p + ".") for p in prefixes
    )


def module_name(path: Path, root: Path = ROOT) -> str:
    """`index/disk/store.py` is `cachegql.index.disk.store`."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["cachegql", *parts])


def is_module(name: str, root: Path = ROOT) -> bool:
    """Whether `name` is a module (`from x import y` may import a module or a name)."""
    first, _, rest = name.partition(".")
    if first == "cachegql":
        base = root.joinpath(*rest.split("."))
        return base.with_suffix(".py").exists() or (base / "__init__.py").exists()
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def imports_of(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, module) for every module the file imports, relative imports resolved."""
    tree = ast.parse(path.read_text(), filename=str(path))
    module = module_name(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.append((node.lineno, base))
            for alias in node.names:
                if is_module(f"{base}.{alias.name}", root):
                    found.append((node.lineno, f"{base}.{alias.name}"))
    return found


def production_files(root: Path = ROOT) -> list[Path]:
    return sorted(p for layer in LAYERS for p in (root / layer).rglob("*.py"))


def violations(rule: Rule, root: Path = ROOT) -> list[str]:
    found = []
    for path in production_files(root):
        if not _under(module_name(path, root), rule.importers):
            continue
        for line, imported in imports_of(path, root):
            if _under(imported, rule.forbidden) and not _under(imported, rule.allowed):
                found.append(f"{path.relative_to(root)}:{line} imports {imported}")
    return found


@pytest.mark.parametrize("rule", RULES, ids=[r.name for r in RULES])
def test_import_rule(rule: Rule) -> None:
    assert violations(rule) == []


def test_the_contract_sees_forbidden_imports(tmp_path: Path) -> None:
    """Imports inside functions, relative ones and submodules named in `from` are all seen."""
    for layer in LAYERS:
        (tmp_path / layer).mkdir()
        (tmp_path / layer / "__init__.py").write_text("")
    (tmp_path / "schema" / "app.py").write_text("")
    (tmp_path / "index" / "probe.py").write_text(
        "from . import errors\n"
        "def f():\n"
        "    from ..schema import app\n"
        "    import strawberry\n"
        "    from cachegql.server import Thing\n"
    )
    assert violations(RULES[0], tmp_path) == [
        "index/probe.py:3 imports cachegql.schema",
        "index/probe.py:3 imports cachegql.schema.app",
        "index/probe.py:4 imports strawberry",
        "index/probe.py:5 imports cachegql.server",
    ]


def long_modules(root: Path = ROOT, limit: int = MAX_MODULE_LINES) -> dict[str, int]:
    """The modules of the package over `limit` lines (lines of the file), with their length."""
    lengths = {
        path.relative_to(root).as_posix(): len(path.read_text().splitlines())
        for path in production_files(root)
    }
    return {name: length for name, length in lengths.items() if length > limit}


def test_no_module_is_over_the_limit() -> None:
    long = long_modules()
    assert long == {}, f"split these along their seams (at most {MAX_MODULE_LINES} lines)"


def test_the_length_counts_every_line(tmp_path: Path) -> None:
    for layer in LAYERS:
        (tmp_path / layer).mkdir()
    (tmp_path / "index" / "short.py").write_text("x = 1\n" * 3)
    (tmp_path / "server" / "long.py").write_text("\n" * 3 + "x = 1\n")
    assert long_modules(tmp_path, limit=3) == {"server/long.py": 4}


def import_cycles(root: Path = ROOT) -> list[list[str]]:
    """Cycles among the modules' top-level imports (those run on import: not the ones in
    functions, nor under `if TYPE_CHECKING:`), each as the modules around it."""
    graph: dict[str, set[str]] = {}
    for path in production_files(root):
        module = module_name(path, root)
        top = [
            n
            for n in ast.parse(path.read_text()).body
            if isinstance(n, ast.Import | ast.ImportFrom)
        ]
        found = {name for line, name in imports_of(path, root) if line in {n.lineno for n in top}}
        graph[module] = {name for name in found if name.startswith("cachegql.") and name != module}
    cycles: list[list[str]] = []
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        for imported in sorted(graph.get(module, ())):
            if imported in path:
                cycles.append([*path[path.index(imported) :], imported])
            elif imported not in done:
                visit(imported, [*path, imported])
        done.add(module)

    for module in sorted(graph):
        if module not in done:
            visit(module, [module])
    return cycles


def test_no_import_cycles() -> None:
    assert import_cycles() == []


def test_an_import_cycle_is_seen(tmp_path: Path) -> None:
    for layer in LAYERS:
        (tmp_path / layer).mkdir()
        (tmp_path / layer / "__init__.py").write_text("")
    (tmp_path / "demo" / "a.py").write_text("from cachegql.demo.b import x\n")
    (tmp_path / "demo" / "b.py").write_text("def f():\n    from cachegql.demo import c\n")
    (tmp_path / "demo" / "c.py").write_text("from . import a\n")
    assert import_cycles(tmp_path) == []  # b imports c only when f runs
    (tmp_path / "demo" / "b.py").write_text("from cachegql.demo import c\nx = 1\n")
    assert import_cycles(tmp_path) == [
        ["cachegql.demo.a", "cachegql.demo.b", "cachegql.demo.c", "cachegql.demo.a"]
    ]
