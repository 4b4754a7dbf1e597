"""One dependency's or one parameters object's parsed JSON value, read: an edge, or a
node's variants and flags (node_reader.py memoises them by their text). A bad value
raises ValueError, saying what is wrong with it."""

from __future__ import annotations

from collections.abc import Mapping
from sys import intern
from typing import Any

from cachegql.index.ingest.dag_nodes import Edge
from cachegql.index.spack.hashes import is_hash
from cachegql.index.spack.variants import Variant, parse_variant

__all__ = ["FLAG_KINDS", "Parameters", "edge_of", "json_kind", "parameters_of"]

# The six compiler flag lists of `parameters`: flags, not variants.
FLAG_KINDS = ("cflags", "cppflags", "cxxflags", "fflags", "ldflags", "ldlibs")
_PATCH_DIGITS = 7  # Spack shows patch sha256s cut to this many characters


Parameters = tuple[tuple[Variant, ...], tuple[tuple[str, tuple[str, ...]], ...]]


def parameters_of(parameters: Mapping[str, Any]) -> Parameters:
    """Variants in Spack's string forms (booleans first, then by name) and the flags."""
    if not isinstance(parameters, Mapping):
        raise ValueError("'parameters' must be an object")
    booleans, others = [], []
    for name in sorted(parameters):
        value = parameters[name]
        if name in FLAG_KINDS:
            continue
        if isinstance(value, bool):
            booleans.append(f"+{name}" if value else f"~{name}")
        elif isinstance(value, list | tuple):
            values = [str(v)[:_PATCH_DIGITS] if name == "patches" else str(v) for v in value]
            if values:
                others.append(f"{name}={','.join(sorted(values))}")
        elif value is not None:
            others.append(f"{name}={value}")
    variants = []
    for text in booleans + others:
        try:
            variants.append(parse_variant(text))
        except ValueError as exc:
            raise ValueError(f"variant {text!r} cannot be read: {exc}") from None
    flags = tuple(
        (kind, tuple(str(f) for f in parameters[kind]))
        for kind in FLAG_KINDS
        if isinstance(parameters.get(kind), list) and parameters[kind]
    )
    return tuple(variants), flags


def edge_of(item: Any, aliases: Mapping[str, str]) -> Edge:
    """One dependency: `{name, hash, type}` or `{name, hash, parameters: {deptypes, virtuals}}`."""
    try:
        name = item["name"]
        digest = item.get("hash") or item.get("full_hash") or item.get("build_hash")
        parameters = item.get("parameters")
    except (TypeError, KeyError, AttributeError):
        raise ValueError("a dependency must be an object with a 'name'") from None
    if not isinstance(name, str) or not isinstance(digest, str):
        raise ValueError(f"dependency {name!r} has no hash")
    if parameters and not isinstance(parameters, dict):
        raise ValueError(f"dependency {name!r}: 'parameters' must be an object")
    if parameters:
        deptypes, virtuals = parameters.get("deptypes") or (), parameters.get("virtuals") or ()
    else:
        deptypes, virtuals = item.get("type") or (), ()
    deptypes = _texts(deptypes, name, "deptypes" if parameters else "type")
    virtuals = _texts(virtuals, name, "virtuals")
    target = aliases.get(digest, digest)
    if not is_hash(target):  # it becomes a node of the DAG, and its hash a row's
        raise ValueError(f"dependency {name!r}: hash {digest!r} is not a Spack hash")
    # Millions of edges point at a few hundred thousand nodes and have a few kinds:
    # share their strings and tuples.
    return Edge(
        intern(name),
        intern(target),
        _SHARED.setdefault(deptypes, deptypes),
        _SHARED.setdefault(virtuals, virtuals),
    )


def json_kind(value: object) -> str:
    """A value's JSON kind, as an error names it."""
    return "null" if value is None else type(value).__name__


def _texts(value: object, name: str, key: str) -> tuple[str, ...]:
    """A dependency's deptypes or virtuals: a string or a list of strings."""
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple):
        for item in value:  # a loop, not all() of a generator: asked twice per edge read
            if not isinstance(item, str):
                break
        else:
            return tuple(value)
    raise ValueError(f"dependency {name!r}: {key!r} must be a string or a list of strings")


_SHARED: dict[tuple[str, ...], tuple[str, ...]] = {}
