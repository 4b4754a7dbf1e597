"""Spack spec syntax in queries: `hdf5@1.14: +mpi %gcc@13 target=x86_64_v3 ^zlib /22xi27u`.

The grammar is Spack's: an optional package name, then in any order `@versions`,
`%compiler[@versions]`, `+v ~v -v`, `v=x` (also `v:=x`, `v==x`, multi-valued `v=a,b`,
quoted values), compiler flags (`cflags="-O2 -g"`), `namespace=`, `os= target=
platform= arch=p-o-t` and `/hashprefix`; each `^name ...` starts a dependency whose
constraints bind to one node of the spec's DAG; target ranges and lists (`x86_64_v2:`)
follow archspec's order (`targets`). What the index cannot answer (per-language
compilers, propagation) is refused with a message rather than ignored; whether a tag
records dependencies is the index's to say.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from cachegql.index.errors import CriteriaError, shorten
from cachegql.index.spack.hashes import normalize_prefix
from cachegql.index.spack.targets import target_names
from cachegql.index.spack.variants import Variant, parse_variant
from cachegql.index.spack.versions import VersionRange, parse_constraint

__all__ = [
    "CompilerConstraint",
    "SpecQuery",
    "SpecQueryError",
    "SpecSyntaxError",
    "UnsupportedSpecError",
    "VersionConstraint",
    "parse_spec_query",
]

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_\-.]*")
_VARIANT_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_\-.]*")
_VERSION_LIST = re.compile(r"[A-Za-z0-9_.\-=:,]+")
_VALUE = re.compile(r"[A-Za-z0-9_\-+*.,:=%~/]+")
_HASH = re.compile(r"[A-Za-z0-9_]+")
_OS_KEYS = ("os", "operating_system")
_ARCH_KEYS = ("arch", "architecture")
_FLAG_KEYS = ("cflags", "cxxflags", "fflags", "ldflags", "ldlibs", "cppflags")
CONTEXT = 20


class SpecQueryError(CriteriaError):
    """A spec query that cannot be used: `said` why, in one line, `column` (from 1) where
    in `text`, and `near` the text around it; the message adds the text with a caret
    under that column, for a terminal (an API says the line and the column apart)."""

    def __init__(self, said: str, text: str, position: int) -> None:
        self.said, self.text, self.column = said, text, position + 1
        self.near = _window(text, position)[0]
        super().__init__(f"{said}\n{_pointer(text, position)}")

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return type(self), (self.said, self.text, self.column - 1)


class SpecSyntaxError(SpecQueryError):
    """The text is not valid spec syntax."""

    def __init__(self, text: str, position: int, problem: str, expected: str) -> None:
        self.position, self.problem, self.expected = position, problem, expected
        super().__init__(f"{problem} at column {position + 1}: expected {expected}", text, position)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return type(self), (self.text, self.position, self.problem, self.expected)


class UnsupportedSpecError(SpecQueryError):
    """Valid spec syntax that the index cannot answer (pages carry no such data)."""


def _window(text: str, position: int) -> tuple[str, int]:
    """The text around `position` (`CONTEXT` characters each side, "..." where cut), and
    where `position` is in it."""
    start = max(0, position - CONTEXT)
    prefix = "..." if start else ""
    suffix = "..." if position + CONTEXT < len(text) else ""
    return f"{prefix}{text[start : position + CONTEXT]}{suffix}", len(prefix) + position - start


def _pointer(text: str, position: int) -> str:
    shown, at = _window(text, position)
    return f"  {shown}\n  {' ' * at}^"


@dataclass(frozen=True, slots=True)
class VersionConstraint:
    text: str
    ranges: tuple[VersionRange, ...]


@dataclass(frozen=True, slots=True)
class CompilerConstraint:
    name: str
    versions: VersionConstraint | None


@dataclass(frozen=True, slots=True)
class SpecQuery:
    """One parsed spec (or dependency) of a query; every given part must hold."""

    text: str
    name: str | None = None
    versions: VersionConstraint | None = None
    compiler: CompilerConstraint | None = None
    variants: tuple[Variant, ...] = ()
    flags: tuple[tuple[str, str], ...] = ()
    """(kind, flag) pairs, each required: `cflags="-O2 -g"` is (cflags, -O2), (cflags, -g)."""
    namespace: str | None = None
    os: str | None = None
    platform: str | None = None
    target: str | None = None
    hash_prefix: str | None = None
    dependencies: tuple[SpecQuery, ...] = ()
    """One per `^`: some node of the spec's DAG (any depth) must satisfy each."""
    position: int = 0
    """Where this node starts in `text` (its `^` for a dependency), for error messages."""


@dataclass
class _Node:
    """The parts of one node being parsed: the root spec or one `^` dependency."""

    position: int
    parts: dict[str, Any] = field(default_factory=dict)
    variants: list[Variant] = field(default_factory=list)
    flags: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class _Parser:
    text: str
    position: int = 0
    nodes: list[_Node] = field(default_factory=lambda: [_Node(0)])

    @property
    def parts(self) -> dict[str, Any]:
        return self.nodes[-1].parts

    @property
    def variants(self) -> list[Variant]:
        return self.nodes[-1].variants

    def fail(self, problem: str, expected: str, position: int | None = None) -> SpecSyntaxError:
        return SpecSyntaxError(
            self.text, self.position if position is None else position, problem, expected
        )

    def skip_spaces(self) -> bool:
        start = self.position
        while self.position < len(self.text) and self.text[self.position].isspace():
            self.position += 1
        return self.position > start

    def peek(self) -> str:
        return self.text[self.position] if self.position < len(self.text) else ""

    def take(self, pattern: re.Pattern[str], expected: str) -> str:
        self.skip_spaces()
        match = pattern.match(self.text, self.position)
        if not match:
            found = self.peek()
            raise self.fail(
                f"unexpected {found!r}" if found else "unexpected end of query", expected
            )
        self.position = match.end()
        return match.group()

    def set_once(self, key: str, value: object, label: str, start: int) -> None:
        if key in self.parts:
            raise self.fail(f"a second {label}", f"one {label} per spec", start)
        self.parts[key] = value

    def parse(self) -> SpecQuery:
        spaced = True
        while True:
            spaced = self.skip_spaces() or spaced
            if self.position >= len(self.text):
                break
            self.item(spaced)
            spaced = False
        for node in self.nodes[1:]:
            if "name" not in node.parts:
                raise self.fail(
                    "a dependency without a package name",
                    "a name after '^' (e.g. ^zlib@1.3)",
                    node.position,
                )
        root, *dependencies = (self.query(node) for node in self.nodes)
        return replace(root, dependencies=tuple(dependencies))

    def query(self, node: _Node) -> SpecQuery:
        return SpecQuery(
            text=self.text,
            variants=tuple(node.variants),
            flags=tuple(node.flags),
            position=node.position,
            **node.parts,
        )

    def item(self, after_space: bool) -> None:
        start = self.position
        char = self.peek()
        if char == "@":
            self.position += 1
            self.set_once("versions", self.version_list(start), "version constraint", start)
        elif char == "%":
            self.compiler(start)
        elif char in "+~" or (char == "-" and (after_space or start == 0)):
            self.bool_variant(start)
        elif char == "/":
            self.position += 1
            digits = self.take(_HASH, "a hash prefix after '/'")
            try:
                prefix = normalize_prefix(digits)
            except CriteriaError as exc:
                raise self.fail(
                    f"bad hash prefix /{digits}", f"base32 characters ({exc})", start
                ) from None
            self.set_once("hash_prefix", prefix, "hash", start)
        elif char == "^":
            self.position += 1
            if self.peek() == "^":
                raise UnsupportedSpecError(
                    "'^^' (a dependency of a dependency, Spack 1.x) cannot be answered; "
                    "'^name' already matches at any depth",
                    self.text,
                    start,
                )
            self.nodes.append(_Node(start))
        elif _NAME.match(self.text, start):
            self.word(start)
        else:
            raise self.fail(
                f"unexpected {char!r}",
                "a package name, @version, %compiler, +variant, ~variant, key=value or /hash",
            )

    def version_list(self, start: int) -> VersionConstraint:
        text = self.take(
            _VERSION_LIST, "a version, range or list after '@' (e.g. @1.2, @1.2:1.4, @=1.2)"
        )
        try:
            ranges = parse_constraint(text)
        except ValueError as exc:
            raise self.fail(
                f"bad version constraint @{shorten(text)} ({exc})",
                "a valid version constraint",
                start,
            ) from None
        return VersionConstraint(text, tuple(ranges))

    def compiler(self, start: int) -> None:
        self.position += 1
        if self.peek() == "%":
            raise UnsupportedSpecError(
                "propagated compiler preferences ('%%') cannot be answered: the index "
                "records the compiler each spec was built with",
                self.text,
                start,
            )
        name = self.take(_NAME, "a compiler name after '%' (e.g. %gcc or %gcc@13)")
        if self.peek() in (",", "="):
            raise UnsupportedSpecError(
                "per-language compilers ('%c,cxx=gcc') cannot be answered: write %gcc@13, "
                "which matches the compiler of any language",
                self.text,
                start,
            )
        versions = None
        if self.peek() == "@":
            self.position += 1
            versions = self.version_list(start)
        self.set_once("compiler", CompilerConstraint(name, versions), "compiler", start)

    def bool_variant(self, start: int) -> None:
        sign = self.peek()
        self.position += 1
        if self.peek() == sign:  # ++x / ~~x propagate to dependencies; the root must still hold
            self.position += 1
        name = self.take(_VARIANT_NAME, f"a variant name after {sign!r}")
        self.variants.append(parse_variant(("~" if sign == "-" else sign) + name))

    def word(self, start: int) -> None:
        name = self.take(_NAME, "a name")
        operator = re.compile(r"\s*(:==|:=|==|=)\s*").match(self.text, self.position)
        if operator is None:
            if "name" in self.parts:
                raise self.fail(
                    f"a second package name {shorten(name)}",
                    "one spec per query (a name starts a new spec)",
                    start,
                )
            self.parts["name"] = name
            return
        self.position = operator.end()
        value = self.value(start, name)
        self.key_value(name, operator.group(1), value, start)

    def value(self, start: int, key: str) -> str:
        quote = self.peek()
        if quote in ("'", '"'):
            end = self.text.find(quote, self.position + 1)
            if end < 0:
                raise self.fail("unterminated quoted value", f"a closing {quote}", self.position)
            value = self.text[self.position + 1 : end]
            self.position = end + 1
            return value
        match = _VALUE.match(self.text, self.position)
        if not match:
            raise self.fail(f"no value for {shorten(key)}", f"a value after {shorten(key + '=')}")
        self.position = match.end()
        return match.group()

    def key_value(self, key: str, operator: str, value: str, start: int) -> None:
        if key in _OS_KEYS:
            self.set_once("os", value, "os", start)
        elif key == "platform":
            self.set_once("platform", value, "platform", start)
        elif key == "target":
            try:
                target_names(value)  # ranges and lists by archspec's order: checked here
            except CriteriaError as exc:
                raise UnsupportedSpecError(str(exc), self.text, start) from None
            self.set_once("target", value, "target", start)
        elif key in _ARCH_KEYS:
            parts = value.split("-")
            if len(parts) == 3:
                for part_key, part in zip(("platform", "os", "target"), parts, strict=True):
                    self.set_once(part_key, part, part_key, start)
            else:
                self.set_once("target", value, "target", start)
        elif key in _FLAG_KEYS:
            flags = value.split()
            if not flags:
                raise self.fail(f"no flags in {key}=", f'flags, e.g. {key}="-O2 -g"', start)
            self.nodes[-1].flags.extend((key, flag) for flag in flags)
        elif key == "namespace":
            self.set_once("namespace", value, "namespace", start)
        else:
            text = f"{key}={value}" if "," not in value else f"{key}='{value}'"
            try:
                self.variants.append(parse_variant(text))
            except ValueError as exc:
                raise self.fail(
                    f"bad variant {shorten(key + operator + value)}",
                    f"a variant value ({exc})",
                    start,
                ) from None


def parse_spec_query(text: str) -> SpecQuery:
    """Parse a spec query; raise SpecSyntaxError or UnsupportedSpecError with a clear message."""
    if not text.strip():
        raise SpecSyntaxError(text, 0, "empty query", "a spec such as 'hdf5@1.14 +mpi'")
    return _Parser(text).parse()
