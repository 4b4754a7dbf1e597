"""Deterministic synthetic cache.spack.io package pages, for demos and benchmarks.

The output imitates the real site closely enough to exercise every code path of the
ingest: both page styles (2024: fixed key order, `gcc@=11.4.0`, tarball URLs; 2025:
sorted keys, `gcc@11.4.0`, `none` for binary-only packages), every variant form,
a skewed number of specs per package, and `meta` that is the exact summary of
`spec_details`. Same config, same bytes: only `random.Random` seeded from the config
is used, and nothing depends on set or hash-randomised iteration order.

What it draws from is in `catalogue`, the draws in `draws`, each package's traits in
`packages`; the specs of each page and the pages' text are here.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from cachegql.demo.catalogue import (
    _LOGNORMAL_SIGMA,
    _MAX_PACKAGE_SHARE,
    _NONE,
    _SECOND_STACK_SHARE,
    _SIZE_SHARE,
    _Compiler,
)

# Re-exported: tests/test_demo_mirrors.py reads the stacks from here.
from cachegql.demo.catalogue import _STACKS as _STACKS
from cachegql.demo.draws import _apportion, _cum, _pick, _spec_hash
from cachegql.demo.packages import (
    _make_package,
    _Package,
    _package_names,
    _variant_name_count,
    _variant_pool,
)

__all__ = ["DemoConfig", "write_pages"]


@dataclass(frozen=True)
class DemoConfig:
    """How much to generate: distinct packages, total specs over all pages, tags, seed."""

    packages: int = 200
    specs: int = 5000
    tags: tuple[str, ...] = ("develop", "v0.23.0")
    seed: int = 1


@dataclass(frozen=True)
class _Plan:
    """Packages in page order, and each one's spec count per tag (0: no page)."""

    packages: tuple[_Package, ...]
    counts: tuple[tuple[int, ...], ...]


def _validate(config: DemoConfig) -> None:
    """Raise ValueError for a config that cannot be generated."""
    if config.packages < 1:
        raise ValueError("packages must be at least 1")
    if config.specs < config.packages:
        raise ValueError("specs must be at least packages (every package needs a spec)")
    if not config.tags or len(set(config.tags)) != len(config.tags):
        raise ValueError("tags must be one or more distinct names")
    for tag in config.tags:
        if not tag or tag in (".", "..") or "/" in tag or "\\" in tag or tag != tag.strip():
            raise ValueError(f"tag {tag!r} cannot be a folder name")


def _plan(config: DemoConfig) -> _Plan:
    """Everything decided before the first spec: packages, their looks, spec counts."""
    _validate(config)
    rng = random.Random(f"cachegql-demo/{config.seed}")
    names = _package_names(rng, config.packages)
    pool = _variant_pool(rng, _variant_name_count(config.specs) - 1)
    pool_cum = _cum([1.0 / (i + 8) ** 0.7 for i in range(len(pool))])
    forced = {p: i for i, p in enumerate(rng.sample(range(len(names)), len(names))[: len(pool)])}
    packages = [
        _make_package(rng, name, pool, pool_cum, forced.get(j)) for j, name in enumerate(names)
    ]
    totals = _apportion(config.specs, _package_weights(rng, len(names)))
    counts = [_split_over_tags(rng, total, len(config.tags)) for total in totals]
    order = sorted(range(len(names)), key=lambda j: names[j])
    return _Plan(tuple(packages[j] for j in order), tuple(counts[j] for j in order))


def _package_weights(rng: random.Random, n: int) -> list[float]:
    """Heavy-tailed weights, largest mostly on the commonest real packages."""
    draws = sorted((rng.lognormvariate(0.0, _LOGNORMAL_SIGMA) for _ in range(n)), reverse=True)
    cap = _MAX_PACKAGE_SHARE * math.fsum(draws)
    rank = sorted(range(n), key=lambda j: (j + 5) * rng.uniform(0.2, 3.0))
    weights = [0.0] * n
    for draw, j in zip(draws, rank, strict=True):
        weights[j] = cap * -math.expm1(-draw / cap) if n >= 50 else draw
    return weights


def _split_over_tags(rng: random.Random, total: int, ntags: int) -> tuple[int, ...]:
    """Present in most tags, the first one the fullest; each present tag gets >= 1 spec."""
    present = [i for i in range(ntags) if rng.random() < (0.97 if i == 0 else 0.88)] or [0]
    present = present[:total]
    tag_weights = [2.0 if i == 0 else 1.0 / (1.0 + 0.15 * i) for i in present]
    counts = [0] * ntags
    for i, n in zip(present, _apportion(total, tag_weights), strict=True):
        counts[i] = n
    return tuple(counts)


_SpecValue = str | int | list[str]


@dataclass(frozen=True)
class _Spec:
    """One generated spec, before it is laid out in a page style."""

    hash: str
    compiler: _Compiler | None
    version: str
    os: str
    platform: str
    target: str
    variants: tuple[str, ...]
    stacks: tuple[str, ...]
    size: str | int


def _make_spec(rng: random.Random, package: _Package, serial: int, legacy: bool) -> _Spec:
    choice = package.choices[_pick(rng, package.choice_cum)]
    stack = choice.stack
    os, target = stack.archs[_pick(rng, choice.arch_cum)]
    compiler = stack.compilers[_pick(rng, choice.compiler_cum)]
    stacks = [stack.name]
    if choice.partners and rng.random() < _SECOND_STACK_SHARE:
        stacks.append(rng.choice(choice.partners))
    stacks.insert(0 if rng.random() < 0.7 else len(stacks), "root")
    return _Spec(
        hash=_spec_hash(rng, serial),
        compiler=None if package.compiler_free and not legacy else compiler,
        version=package.versions[_pick(rng, package.version_cum)],
        os=os,
        platform=stack.platform,
        target=target,
        variants=package.configs[_pick(rng, package.config_cum)],
        stacks=tuple(stacks),
        size=rng.randint(20_000, 400_000_000) if rng.random() < _SIZE_SHARE else "-",
    )


def _compiler_text(spec: _Spec, legacy: bool) -> str:
    """The compiler as the page style writes it."""
    return _NONE if spec.compiler is None else spec.compiler.text(legacy)


def _legacy_detail(spec: _Spec, tag: str, name: str) -> dict[str, _SpecValue]:
    """2024 layout: fixed key order, unsorted stacks, a tarball URL."""
    assert spec.compiler is not None
    arch = f"{spec.platform}-{spec.os}-{spec.target}"
    comp = f"{spec.compiler.name}-{spec.compiler.version}"
    pkg = f"{name}-{spec.version}"
    return {
        "hash": spec.hash,
        "compiler": spec.compiler.text(legacy=True),
        "versions": [spec.version],
        "os": spec.os,
        "platform": spec.platform,
        "target": spec.target,
        "variants": list(spec.variants),
        "stacks": list(spec.stacks),
        "size": spec.size,
        "tarball": f"https://binaries.spack.io/{tag}/build_cache/{arch}/{comp}/{pkg}/"
        f"{arch}-{comp}-{pkg}-{spec.hash}.spack",
    }


def _current_detail(spec: _Spec) -> dict[str, _SpecValue]:
    """2025 layout: keys and stacks sorted, no tarball."""
    return {
        "compiler": _compiler_text(spec, legacy=False),
        "hash": spec.hash,
        "os": spec.os,
        "platform": spec.platform,
        "size": spec.size,
        "stacks": sorted(spec.stacks),
        "target": spec.target,
        "variants": list(spec.variants),
        "versions": [spec.version],
    }


def _meta(specs: Sequence[_Spec], legacy: bool) -> dict[str, object]:
    """The summary the site writes next to spec_details, in the style's key order."""
    by_stack: dict[str, int] = {}
    for spec in specs:
        for stack in spec.stacks:
            by_stack[stack] = by_stack.get(stack, 0) + 1
    fields: dict[str, object] = {
        "versions": sorted({s.version for s in specs}),
        "compilers": sorted({_compiler_text(s, legacy) for s in specs}),
        "oss": sorted({s.os for s in specs}),
        "platforms": sorted({s.platform for s in specs}),
        "targets": sorted({s.target for s in specs}),
        "stacks": sorted(by_stack),
        "num_specs": len(specs),
        "num_specs_by_stack": by_stack if legacy else dict(sorted(by_stack.items())),
    }
    return fields if legacy else dict(sorted(fields.items()))


def _render_page(tag: str, name: str, specs: list[_Spec], legacy: bool) -> str:
    """The page text; like real pages it ends with `---` and no newline."""
    if legacy:
        details = [_legacy_detail(s, tag, name) for s in specs]
    else:
        specs.sort(key=lambda s: s.hash)
        details = [_current_detail(s) for s in specs]
    return (
        f'---\ntitle: "{name}"\nlayout: cache\ncategories: [package, {tag}]\n'
        f"meta: {json.dumps(_meta(specs, legacy))}\n"
        f"spec_details: {json.dumps(details)}\n---"
    )


def _pages(config: DemoConfig) -> Iterator[tuple[str, str, str, int]]:
    """(tag, package, page text, spec count), tag by tag, packages in name order."""
    plan = _plan(config)
    last = len(config.tags) - 1
    serial = 0
    for t, tag in enumerate(config.tags):
        for package, counts in zip(plan.packages, plan.counts, strict=True):
            n = counts[t]
            if n == 0:
                continue
            legacy = (t == last and last > 0) or package.legacy
            rng = random.Random(f"cachegql-demo/{config.seed}/{tag}/{package.name}")
            specs = [_make_spec(rng, package, serial + i, legacy) for i in range(n)]
            serial += n
            yield tag, package.name, _render_page(tag, package.name, specs, legacy), n


def write_pages(config: DemoConfig, out_dir: Path) -> tuple[int, int]:
    """Write `out_dir/_cache/<tag>/<package>/specs.md` for every page; return (pages, specs)."""
    pages = specs = 0
    for tag, name, text, n in _pages(config):
        folder = out_dir / "_cache" / tag / name
        folder.mkdir(parents=True, exist_ok=True)
        with (folder / "specs.md").open("w", encoding="utf-8", newline="\n") as out:
            out.write(text)
        pages += 1
        specs += n
    return pages, specs
