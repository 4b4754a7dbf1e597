"""A synthetic package: its name, versions, build system, variants and the stacks and
compilers it is built with, drawn in the order of the one random stream."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from cachegql.demo.catalogue import (
    _BINARY_ONLY,
    _BUILD_SYSTEM_BY_PREFIX,
    _BUILD_SYSTEM_WEIGHTS,
    _BUILD_SYSTEMS,
    _COMPILER_FREE,
    _DEV_TOOLS,
    _DOTTED_PARTS,
    _EXTRA_VARIANT_WEIGHTS,
    _GPU_STACKS,
    _HEP,
    _IDENT_CHARS,
    _KNOWN_VERSIONS,
    _LEGACY_SHARE_IN_NEW_TAGS,
    _NAME_LENGTH_WEIGHTS,
    _NAME_WORDS,
    _PREFIX_WEIGHTS,
    _PREFIXES,
    _REAL_PACKAGES,
    _REAL_VARIANTS,
    _STACK_COUNT_WEIGHTS,
    _STACKS,
    _VARIANT_PATTERNS,
    _VARIANT_WORDS,
    _VERSION_COUNT_WEIGHTS,
    _Stack,
    _VariantDef,
    _VariantKind,
)
from cachegql.demo.draws import _cum, _distinct, _front_weights, _pick

__all__ = [
    "_Package",
    "_PackageVariant",
    "_build_system",
    "_choices",
    "_compiler_free",
    "_group",
    "_make_package",
    "_package_names",
    "_package_variants",
    "_stack_affinity",
    "_variant_name_count",
    "_variant_pool",
    "_variant_value",
    "_versions",
]


def _package_names(rng: random.Random, count: int) -> list[str]:
    """Real Spack names first, then generated ones; all distinct."""
    names = list(_REAL_PACKAGES[:count])
    taken = set(names)
    prefix_cum = _cum(_PREFIX_WEIGHTS)
    length_cum = _cum(_NAME_LENGTH_WEIGHTS)
    while len(names) < count:
        name = _generated_name(rng, prefix_cum, length_cum)
        if name not in taken:
            taken.add(name)
            names.append(name)
    return names


def _generated_name(
    rng: random.Random, prefix_cum: Sequence[float], length_cum: Sequence[float]
) -> str:
    """A name like py-foo-bar, libfoo, r-foo_bar2 or py-zope.foo."""
    prefix = _PREFIXES[_pick(rng, prefix_cum)]
    parts = [rng.choice(_NAME_WORDS) for _ in range(1 + _pick(rng, length_cum))]
    roll = rng.random()
    if prefix == "py-" and roll < 0.05:
        parts[0] = f"{rng.choice(_DOTTED_PARTS)}.{parts[0]}"
    elif roll < 0.08:
        parts[-1] = f"{parts[-1]}_{rng.choice(_NAME_WORDS)}"
    elif not prefix and roll < 0.3:
        parts[0] = "lib" + parts[0]
    if rng.random() < 0.1:
        parts[-1] += str(rng.randint(2, 5))
    return prefix + "-".join(parts)


def _variant_pool(rng: random.Random, count: int) -> list[_VariantDef]:
    """`count` variant definitions besides build_system: real ones first, then generated."""
    pool = list(_REAL_VARIANTS[:count])
    taken = {d.name for d in pool} | {"build_system"}
    while len(pool) < count:
        pattern = rng.choice(_VARIANT_PATTERNS)
        name = pattern.format(a=rng.choice(_VARIANT_WORDS), b=rng.choice(_VARIANT_WORDS))
        if name in taken:
            continue
        taken.add(name)
        pool.append(_generated_variant(rng, name))
    return pool


def _generated_variant(rng: random.Random, name: str) -> _VariantDef:
    """Mostly boolean, like real variants; the rest take made-up values."""
    roll = rng.random()
    if roll < 0.7:
        return _VariantDef(name, "bool")
    values = tuple(rng.sample(("auto", "none", "on", "off", "v1", "v2", "all", "min"), 4))
    kind: _VariantKind = "single" if roll < 0.9 else "multi"
    return _VariantDef(name, kind, values, 0.2 if kind == "multi" else 0.0)


def _variant_name_count(specs: int) -> int:
    """How many distinct variant names (build_system included) a generation of `specs` uses."""
    return min(700, max(60, 40 + specs // 1400))


@dataclass(frozen=True)
class _Choice:
    """How one package's spec is built on one stack: arch options and compilers."""

    stack: _Stack
    arch_cum: tuple[float, ...]
    compiler_cum: tuple[float, ...]
    partners: tuple[str, ...]


@dataclass(frozen=True)
class _Package:
    """Everything stable about a package across tags: the look of all its specs."""

    name: str
    versions: tuple[str, ...]
    version_cum: tuple[float, ...]
    choices: tuple[_Choice, ...]
    choice_cum: tuple[float, ...]
    configs: tuple[tuple[str, ...], ...]
    config_cum: tuple[float, ...]
    compiler_free: bool
    legacy: bool


def _group(name: str) -> str:
    """Which family of stacks a package mostly lives in."""
    if name in _BINARY_ONLY or name in {"nccl", "magma"}:
        return "gpu"
    if name in _HEP:
        return "hep"
    if name in _DEV_TOOLS:
        return "dev"
    return "ml" if name.startswith("py-") else "hpc"


def _stack_affinity(stack: _Stack, group: str) -> float:
    """How much likelier a stack is for a package of `group`."""
    if group == "gpu":
        return 8.0 if stack.name in _GPU_STACKS else 0.05
    return 8.0 if stack.group == group else 1.0


def _package_stacks(rng: random.Random, name: str) -> list[_Stack]:
    """The stacks that build the package, skewed toward its family."""
    group = _group(name)
    cum = _cum([s.weight * _stack_affinity(s, group) for s in _STACKS])
    k = 1 + _pick(rng, _cum(_STACK_COUNT_WEIGHTS))
    return [_STACKS[i] for i in _distinct(rng, cum, k)]


def _choices(rng: random.Random, stacks: list[_Stack]) -> tuple[_Choice, ...]:
    """Per stack: where specs land, and which other stacks of the package may share them."""
    out = []
    for stack in stacks:
        oss = {os for os, _ in stack.archs}
        partners = tuple(
            s.name
            for s in stacks
            if s is not stack and s.platform == stack.platform and oss & {o for o, _ in s.archs}
        )
        out.append(
            _Choice(
                stack,
                _front_weights(len(stack.archs)),
                _cum([rng.uniform(0.2, 1.0) / (i + 1) for i in range(len(stack.compilers))]),
                partners,
            )
        )
    return tuple(out)


def _versions(rng: random.Random, name: str) -> tuple[str, ...]:
    """1-6 versions in one of the version schemes seen on real pages."""
    if name in _KNOWN_VERSIONS:
        return _KNOWN_VERSIONS[name]
    n = 1 + _pick(rng, _cum(_VERSION_COUNT_WEIGHTS))
    scheme = _pick(rng, _cum((55.0, 15.0, 6.0, 3.0, 10.0, 3.0, 3.0, 2.0)))
    out: list[str] = []
    for part in _version_parts(rng, n):
        version = _format_version(scheme, part)
        if version not in out:
            out.append(version)
    if rng.random() < 0.08 and not name.startswith("py-"):
        out.append(rng.choice(("develop", "master", "main")))
    return tuple(out)


def _version_parts(rng: random.Random, n: int) -> list[tuple[int, int, int]]:
    """`n` increasing (major, minor, patch) triples."""
    major = rng.choice((0, 0, 1, 1, 2, 3, 4, 5, 6, 8, 12))
    minor, patch = rng.randint(0, 30), rng.randint(0, 12)
    parts = []
    for _ in range(n):
        parts.append((major, minor, patch))
        if rng.random() < 0.6:
            patch += rng.randint(1, 3)
        else:
            minor, patch = minor + rng.randint(1, 2), 0
    return parts


def _format_version(scheme: int, part: tuple[int, int, int]) -> str:
    """A version triple in scheme `scheme`: 1.14.3, 36.1, 8.9.7.29-12, 2023.08.14.0-free, ..."""
    major, minor, patch = part
    formats = (
        f"{major}.{minor}.{patch}",
        f"{major * 10 + minor}.{patch}",
        f"{major}.{minor}.{patch}.0",
        f"{major + 8}.{minor % 10}.{patch}.{minor + 20}-12",
        f"{2020 + major % 5}.{minor % 12 + 1}.{patch}",
        f"{2020 + major % 5}.{minor % 12 + 1:02d}.{patch + 1:02d}.0-free",
        f"{major:02d}.{minor:02d}.{patch:02d}",
        f"{2020 + major % 5}{minor % 12 + 1:02d}{patch % 28 + 1:02d}",
    )
    return formats[scheme]


def _build_system(rng: random.Random, name: str) -> str:
    """The build_system value, following the name prefix as Spack packages do."""
    if name in _BINARY_ONLY or (name in _COMPILER_FREE and not name.startswith("py-")):
        return "generic"
    for prefix, system in _BUILD_SYSTEM_BY_PREFIX.items():
        if name.startswith(prefix):
            return system
    return _BUILD_SYSTEMS[_pick(rng, _cum(_BUILD_SYSTEM_WEIGHTS))]


def _compiler_free(rng: random.Random, name: str) -> bool:
    """Spack 1.0 records no compiler for binary-only and pure-language packages."""
    if name in _BINARY_ONLY or name in _COMPILER_FREE:
        return True
    share = {"py-": 0.35, "perl-": 0.4, "r-": 0.15, "ruby-": 0.5, "lua-": 0.3}
    for prefix, p in share.items():
        if name.startswith(prefix):
            return rng.random() < p
    return False


@dataclass(frozen=True)
class _PackageVariant:
    """A variant as one package uses it: separator, default value and value choices."""

    definition: _VariantDef
    sep: str
    default: tuple[str, ...]
    options: tuple[str, ...]


def _package_variants(
    rng: random.Random, pool: list[_VariantDef], cum: Sequence[float], forced: int | None
) -> list[_PackageVariant]:
    """The variants a package has; `forced` (a pool index) comes first when given."""
    indices = [] if forced is None else [forced]
    k = min(max(_pick(rng, _cum(_EXTRA_VARIANT_WEIGHTS)), len(indices)), len(pool))
    while len(indices) < k:
        i = _pick(rng, cum)
        if i not in indices:
            indices.append(i)
    return [_package_variant(rng, pool[i]) for i in indices]


def _package_variant(rng: random.Random, definition: _VariantDef) -> _PackageVariant:
    sep = ":=" if rng.random() < definition.propagate else "="
    if definition.kind == "bool":
        default = ("+",) if rng.random() < 0.5 else ("~",)
        return _PackageVariant(definition, sep, default, ("+", "~"))
    if definition.kind == "patches":
        options = tuple(f"{rng.getrandbits(28):07x}" for _ in range(rng.randint(1, 3)))
        return _PackageVariant(definition, sep, options[:1], options)
    options = definition.values
    if definition.kind == "single":
        return _PackageVariant(definition, sep, (options[0],), options)
    size = rng.randint(1, min(3, len(options)))
    return _PackageVariant(definition, sep, options[:size], options)


def _variant_value(rng: random.Random, pv: _PackageVariant) -> tuple[str, ...]:
    """Mostly the package default; sometimes another value, as real spec sets vary."""
    if rng.random() < 0.75:
        return pv.default
    kind = pv.definition.kind
    if kind in ("bool", "single"):
        return (rng.choice(pv.options),)
    picked = set(rng.sample(pv.options, rng.randint(1, len(pv.options))))
    return tuple(o for o in pv.options if o in picked)


def _render_variant(pv: _PackageVariant, value: tuple[str, ...]) -> str:
    """Page text of a variant; quoted when a value needs it, as `languages='c,c++'`."""
    name = pv.definition.name
    if pv.definition.kind == "bool":
        return value[0] + name
    text = ",".join(value)
    if not set(text) <= _IDENT_CHARS:
        text = f"'{text}'"
    return f"{name}{pv.sep}{text}"


def _configs(
    rng: random.Random, build_system: str, variants: list[_PackageVariant], forced: bool
) -> tuple[tuple[str, ...], ...]:
    """A few variant lists per package: its specs share them, as real spec sets do."""
    count = 1 + min(5, int(rng.expovariate(0.8)))
    out: list[tuple[str, ...]] = []
    for _ in range(count):
        items = [(f"build_system={build_system}", "build_system")]
        for i, pv in enumerate(variants):
            if (forced and i == 0) or rng.random() < 0.9:
                items.append((_render_variant(pv, _variant_value(rng, pv)), pv.definition.name))
        config = tuple(text for text, _ in sorted(items, key=lambda item: item[1]))
        if config not in out:
            out.append(config)
    return tuple(out)


def _make_package(
    rng: random.Random,
    name: str,
    pool: list[_VariantDef],
    pool_cum: Sequence[float],
    forced: int | None,
) -> _Package:
    versions = _versions(rng, name)
    choices = _choices(rng, _package_stacks(rng, name))
    variants = _package_variants(rng, pool, pool_cum, forced)
    configs = _configs(rng, _build_system(rng, name), variants, forced is not None)
    return _Package(
        name=name,
        versions=versions,
        version_cum=_cum([(i + 1) ** 2 for i in range(len(versions))]),
        choices=choices,
        choice_cum=_cum([rng.uniform(0.1, 1.0) for _ in choices]),
        configs=configs,
        config_cum=_front_weights(len(configs)),
        compiler_free=_compiler_free(rng, name),
        legacy=rng.random() < _LEGACY_SHARE_IN_NEW_TAGS,
    )
