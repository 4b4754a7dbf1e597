"""The first part of building the DAG: its packages, planned in dependency order with
their spec counts, variants, dependencies and where they are built."""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Sequence

from cachegql.demo.catalogue import _STACK_COUNT_WEIGHTS, _Stack, _VariantDef
from cachegql.demo.draws import _apportion, _cum, _distinct, _front_weights, _pick
from cachegql.demo.generator import _package_weights
from cachegql.demo.mirror_catalogue import (
    _BASE_WEIGHTS,
    _BUILD_TOOLS,
    _COMPILER_PACKAGES,
    _COMPILER_PACKAGES_BY_PACKAGE,
    _CORE_DEP_SHARE,
    _DEPS_SHAPE,
    _DIRECT_DEPS,
    _FAMILY,
    _FLAG_NAMES,
    _FLAG_SETS,
    _INCLUDED_DEPS,
    _LANGUAGE_WEIGHTS,
    _LANGUAGES,
    _LARGE_PACKAGES,
    _LARGEST_AT_LEAST,
    _MAX_DEPS,
    _MAX_DRAWN_SIZE,
    _MEDIAN_SIZE,
    _MICROARCHITECTURES,
    _MIN_SIZE,
    _NAMESPACE_WEIGHTS,
    _NAMESPACES,
    _NOT_PUSHED_PER_SPEC,
    _OBJECT_TARGET_SHARE,
    _OPTIONAL_DEP_SHARE,
    _PROVIDES,
    _RUNTIME,
    _SIZE_SIGMA,
    _STACK_ORDER,
    _TOOLCHAIN_EDGES,
    _WRAPPER,
    STACK_NAMES,
)
from cachegql.demo.mirror_config import MirrorConfig
from cachegql.demo.mirror_graph import _compact, _Config, _Context, _Dep, _Graph, _Package, _Route
from cachegql.demo.packages import (
    _build_system,
    _choices,
    _compiler_free,
    _group,
    _package_names,
    _package_variants,
    _PackageVariant,
    _stack_affinity,
    _variant_name_count,
    _variant_pool,
    _variant_value,
    _versions,
)

__all__ = ["_Planner", "_edge"]


def _validate(config: MirrorConfig) -> None:
    if config.packages < 1:
        raise ValueError("packages must be at least 1")
    if not 1 <= config.stacks <= len(STACK_NAMES):
        raise ValueError(f"stacks must be between 1 and {len(STACK_NAMES)}")
    if config.dangling < 0:
        raise ValueError("dangling must not be negative")
    if not config.tag or config.tag != config.tag.strip():
        raise ValueError(f"tag {config.tag!r} is not a tag")


class _Planner:
    """Decides the packages of the DAG (`plan`), first in the one random stream; `_Builder`
    goes on to its nodes."""

    def __init__(self, config: MirrorConfig) -> None:
        _validate(config)
        self.config = config
        self.rng = random.Random(f"cachegql-demo-mirror/{config.seed}")
        self.graph = _Graph()
        self.stacks = _STACK_ORDER[: config.stacks]
        self.contexts: list[_Context] = []
        self._context_ids: dict[tuple[int, str, str], int] = {}
        self.arch_ids: list[tuple[int, int]] = []
        for i, stack in enumerate(self.stacks):
            for os_name, target in stack.archs:
                self._context_ids[(i, os_name, target)] = len(self.contexts)
                self.contexts.append(_Context(i, stack.platform, os_name, target))
                self.arch_ids.append(self._arch_texts(stack.platform, os_name, target))
        self.v5 = self.graph.texts(_compact({"original_specfile_version": 5}))
        self.edge_build = self.graph.edge_kinds(_edge(("build",), ()))
        self.edge_link = self.graph.edge_kinds(_edge(("link",), ()))
        self._package_hashes: dict[tuple[int, int], str] = {}
        # (context, compiler of its stack) -> (compiler package, its node, wrapper, runtime)
        self.toolchains: dict[tuple[int, int], tuple[str, int, int, int]] = {}
        # (context, package) -> the external node used there for the package
        self.external_of: dict[tuple[int, int], int] = {}
        self.infrastructure = _infrastructure_count(self.stacks, self.contexts)
        self.not_pushed = round(config.specs * _NOT_PUSHED_PER_SPEC)

    def _arch_texts(self, platform: str, os_name: str, target: str) -> tuple[int, int]:
        """Text numbers of the arch with `target` as a plain string and as an object."""
        vendor, parents, features, cpupart = _MICROARCHITECTURES[target]
        plain = {"platform": platform, "platform_os": os_name, "target": target}
        detailed = {
            "name": target,
            "vendor": vendor,
            "features": sorted(features.split()),
            "generation": 0,
            "parents": list(parents),
            "cpupart": cpupart,
        }
        as_object = {**plain, "target": detailed}
        return self.graph.texts(_compact(plain)), self.graph.texts(_compact(as_object))

    def _arch(self, context: int) -> int:
        """The arch of a node built in `context`: the target mostly plain, sometimes detailed."""
        plain, detailed = self.arch_ids[context]
        return detailed if self.rng.random() < _OBJECT_TARGET_SHARE else plain

    def _family_arch(self, context: _Context) -> int:
        family = _FAMILY.get(context.target, "x86_64")
        plain = {"platform": context.platform, "platform_os": context.os, "target": family}
        return self.graph.texts(_compact(plain))

    def _params(self, variants: Sequence[tuple[str, object]], flags: int) -> int:
        flag_set = _FLAG_SETS[flags - 1] if flags else {}
        items: dict[str, object] = dict(sorted(variants))
        for name in _FLAG_NAMES:
            items[name] = flag_set.get(name, [])
        return self.graph.texts(_compact(items))

    # -- the packages --------------------------------------------------------------------

    def plan(self) -> list[_Package]:
        """The packages in dependency order, each with its spec count."""
        rng, config = self.rng, self.config
        names = _package_names(rng, config.packages)
        regular = [n for n in names if n not in (_WRAPPER, _RUNTIME)]
        base = [n for n in _BASE_WEIGHTS if n in regular]
        ordered = base + [n for n in regular if n not in _BASE_WEIGHTS]
        pool = _variant_pool(rng, _variant_name_count(config.specs) - 1)
        pool_cum = _cum([1.0 / (i + 8) ** 0.7 for i in range(len(pool))])
        counts = _apportion(self._regular_total(len(ordered)), _package_weights(rng, len(ordered)))
        free = [_compiler_free(rng, name) for name in ordered]
        draws = [rng.gammavariate(_DEPS_SHAPE, 1.0) for _ in ordered]
        fan_out = _fan_out(draws, counts, free)
        packages: list[_Package] = []
        for rank, name in enumerate(ordered):
            package = self._package(
                name, rank < len(base), packages, pool, pool_cum, fan_out[rank], free[rank]
            )
            package.count = counts[rank]
            packages.append(package)
        _ensure_a_huge_tarball(packages)
        return packages

    def _regular_total(self, npackages: int) -> int:
        """How many nodes the packages get: the binaries that the compiler runtimes and
        wrappers leave, and the nodes not pushed."""
        config = self.config
        budget = config.specs - self.infrastructure
        if budget < npackages:
            raise ValueError(
                f"specs must be at least {npackages + self.infrastructure} for this config "
                f"({npackages} packages, {self.infrastructure} compiler runtimes and wrappers)"
            )
        if config.dangling > budget:
            raise ValueError(f"dangling must be at most {budget} for this config")
        return budget + self.not_pushed

    def _package(
        self,
        name: str,
        base: bool,
        earlier: list[_Package],
        pool: list[_VariantDef],
        pool_cum: Sequence[float],
        fan_out: int,
        free: bool,
    ) -> _Package:
        rng = self.rng
        versions = _versions(rng, name)
        routes = self._routes(name, base)
        deps = self._package_deps(name, earlier, fan_out)
        variants = _package_variants(rng, pool, pool_cum, None)
        configs = _configs(rng, variants, len(deps))
        size = _LARGE_PACKAGES.get(name) or min(
            _MAX_DRAWN_SIZE, max(_MIN_SIZE, rng.lognormvariate(math.log(_MEDIAN_SIZE), _SIZE_SIGMA))
        )
        languages = () if free else _LANGUAGES[_pick(rng, _cum(_LANGUAGE_WEIGHTS))]
        return _Package(
            name=name,
            namespace=_NAMESPACES[_pick(rng, _cum(_NAMESPACE_WEIGHTS))],
            versions=versions,
            version_cum=_cum([(i + 1) ** 2 for i in range(len(versions))]),
            build_system=_build_system(rng, name),
            routes=routes,
            route_cum=_cum([rng.uniform(0.1, 1.0) for _ in routes]),
            configs=configs,
            config_cum=_front_weights(len(configs)),
            deps=deps,
            languages=languages,
            size=size,
        )

    def _routes(self, name: str, base: bool) -> tuple[_Route, ...]:
        """The stacks that build the package (all of them for low-level packages)."""
        rng = self.rng
        if base:
            stacks = list(self.stacks)
        else:
            group = _group(name)
            cum = _cum([s.weight * _stack_affinity(s, group) for s in self.stacks])
            k = 1 + _pick(rng, _cum(_STACK_COUNT_WEIGHTS))
            stacks = [self.stacks[i] for i in _distinct(rng, cum, k)]
        index = {s.name: i for i, s in enumerate(self.stacks)}
        routes = []
        for choice in _choices(rng, stacks):
            i = index[choice.stack.name]
            contexts = tuple(self._context_ids[(i, o, t)] for o, t in choice.stack.archs)
            partners = {
                c: tuple(
                    index[p]
                    for p in choice.partners
                    if (self.contexts[c].os, self.contexts[c].target) in self.stacks[index[p]].archs
                )
                for c in contexts
            }
            routes.append(_Route(i, contexts, choice.arch_cum, choice.compiler_cum, partners))
        return tuple(routes)

    def _package_deps(self, name: str, earlier: list[_Package], k: int) -> tuple[_Dep, ...]:
        """`k` direct dependencies on earlier packages, mostly on the widely used ones."""
        rng = self.rng
        python = name.startswith("py-")
        weights = []
        for rank, p in enumerate(earlier):
            weight = _BASE_WEIGHTS.get(p.name) or 3.0 / (rank + 1) ** 0.5
            if p.name.startswith("py-") or p.name == "python":
                weight *= 3.0 if python else 0.15
            if p.name in _COMPILER_PACKAGES_BY_PACKAGE:
                weight = 0.0  # a compiler is a dependency through the compiler's edge only
            weights.append(weight)
        k = min(k, sum(1 for w in weights if w))
        if not k:
            return ()
        chosen = sorted(_distinct(rng, _cum(weights), k), key=lambda i: earlier[i].name)
        kinds = self.graph.edge_kinds
        return tuple(
            _Dep(i, earlier[i].name, kinds(_edge(_deptypes(rng, name, earlier[i].name),
                                                 _PROVIDES.get(earlier[i].name, ()))))
            for i in chosen
        )  # fmt: skip


def _infrastructure_count(stacks: Sequence[_Stack], contexts: list[_Context]) -> int:
    """How many compiler-wrapper and gcc-runtime binaries the contexts need."""
    wrappers = {(c.platform, c.os, c.target) for c in contexts}
    runtimes = {
        (c.platform, c.os, c.target, compiler.version)
        for c in contexts
        for compiler in stacks[c.stack].compilers
        if _COMPILER_PACKAGES[compiler.name][0] == "gcc"
    }
    return len(wrappers) + len(runtimes)


def _fan_out(draws: list[float], counts: list[int], free: list[bool]) -> list[int]:
    """Direct dependencies per package (the i-th package has i before it to choose from),
    scaled so that specs have `_DIRECT_DEPS` direct dependencies on average, counting the
    compiler's edges; small configs, with few packages to depend on, may have fewer."""

    def fan_out(scale: float) -> list[int]:
        return [min(i, _MAX_DEPS, int(d * scale)) for i, d in enumerate(draws)]

    def mean(scale: float) -> float:
        total = math.fsum(
            n * (_INCLUDED_DEPS * k + (0 if f else _TOOLCHAIN_EDGES))
            for n, k, f in zip(counts, fan_out(scale), free, strict=True)
        )
        return total / sum(counts)

    low, high = 0.0, 4.0 * _DIRECT_DEPS
    for _ in range(40):
        middle = (low + high) / 2
        low, high = (middle, high) if mean(middle) < _DIRECT_DEPS else (low, middle)
    return fan_out(high)


def _edge(deptypes: tuple[str, ...], virtuals: tuple[str, ...]) -> str:
    return _compact({"deptypes": list(deptypes), "virtuals": sorted(virtuals)})


def _deptypes(rng: random.Random, name: str, dep: str) -> tuple[str, ...]:
    """How `name` depends on `dep`, as Spack packages typically declare it."""
    if dep in _BUILD_TOOLS:
        return ("build",)
    roll = rng.random()
    if name.startswith("py-") and (dep.startswith("py-") or dep == "python"):
        if dep == "python":
            return ("build", "link", "run")
        return (
            ("build", "run") if roll < 0.6 else ("run",) if roll < 0.9 else ("build", "link", "run")
        )
    if dep in ("python", "perl"):
        return ("build",) if roll < 0.6 else ("build", "run")
    if roll < 0.7:
        return ("build", "link")
    return ("build", "link", "run") if roll < 0.85 else ("link",) if roll < 0.95 else ("run",)


def _configs(
    rng: random.Random, variants: list[_PackageVariant], ndeps: int
) -> tuple[_Config, ...]:
    """A few variant configurations per package, each enabling most of its dependencies."""
    count = 1 + min(5, int(rng.expovariate(0.8)))
    core = math.ceil(ndeps * _CORE_DEP_SHARE)
    out: list[_Config] = []
    for _ in range(count):
        values = tuple(
            (pv.definition.name, _json_value(pv, _variant_value(rng, pv)))
            for pv in variants
            if rng.random() < 0.9
        )
        deps = tuple(j for j in range(ndeps) if j < core or rng.random() < _OPTIONAL_DEP_SHARE)
        config = _Config(values, deps)
        if config not in out:
            out.append(config)
    return tuple(out)


def _json_value(pv: _PackageVariant, value: tuple[str, ...]) -> object:
    """A variant value as Spack writes it in a spec: bool, string, sorted list, sha256s."""
    kind = pv.definition.kind
    if kind == "bool":
        return value[0] == "+"
    if kind == "single":
        return value[0]
    if kind == "patches":
        return [short + hashlib.sha256(short.encode()).hexdigest()[7:] for short in value]
    return sorted(value)


def _ensure_a_huge_tarball(packages: list[_Package]) -> None:
    """At least one package above 2 GiB (even 20% smaller), as cuda or py-torch are."""
    largest = max(packages, key=lambda p: p.size)
    largest.size = max(largest.size, _LARGEST_AT_LEAST)
