"""The nodes of the DAG: infrastructure, externals and each package's specs, with their
dependencies, after the packages are planned (`mirror_plan`)."""

from __future__ import annotations

import base64
import hashlib
from array import array
from collections.abc import Hashable, Sequence

from cachegql.demo.catalogue import _SECOND_STACK_SHARE, _Compiler
from cachegql.demo.draws import _pick
from cachegql.demo.mirror_catalogue import (
    _BINARY,
    _CANONICAL_SHARE,
    _COMPILER_COMMANDS,
    _COMPILER_PACKAGES,
    _COMPILER_PACKAGES_BY_PACKAGE,
    _EXTERNAL_CANDIDATES,
    _EXTERNAL_SHARE,
    _FAMILY,
    _FLAG_SETS,
    _FLAG_SHARE,
    _LANGUAGE_OF,
    _MIGRATED_SHARE,
    _OMITTED,
    _RUNTIME,
    _WRAPPER,
)
from cachegql.demo.mirror_graph import _compact, _Context, _Graph, _Package, _quote
from cachegql.demo.mirror_plan import _edge, _Planner

__all__ = ["_Builder"]


class _Builder(_Planner):
    """Decides everything about the DAG, in the order of the one random stream: its
    packages (`_Planner`), then its nodes."""

    def build(self) -> _Graph:
        packages = self.plan()
        self._infrastructure()
        self._externals(packages)
        self._regular(packages)
        return self.graph

    def _infrastructure(self) -> None:
        """Compilers (externals), compiler-wrapper and gcc-runtime for every context."""
        graph = self.graph
        compilers: dict[tuple[str, str, str, str, str], int] = {}
        wrappers: dict[tuple[str, str, str], int] = {}
        runtimes: dict[tuple[str, str, str, str], int] = {}
        for c, context in enumerate(self.contexts):
            stack = self.stacks[context.stack]
            bit = 1 << context.stack
            family = _FAMILY.get(context.target, "x86_64")
            where = (context.platform, context.os, context.target)
            wrapper = wrappers.get(where)
            if wrapper is None:
                wrapper = wrappers[where] = self._tool(c, _WRAPPER, "1.0", [], 1.4e4)
            graph.stacks[wrapper] |= bit
            for i, compiler in enumerate(stack.compilers):
                package, _ = _COMPILER_PACKAGES[compiler.name]
                key = (context.platform, context.os, family, package, compiler.version)
                node = compilers.get(key)
                if node is None:
                    node = compilers[key] = self._compiler(context, compiler)
                runtime = -1
                if package == "gcc":
                    rkey = (*where, compiler.version)
                    runtime = runtimes.get(rkey, -1)
                    if runtime < 0:
                        dep = [("gcc", node, self.edge_build)]
                        runtime = self._tool(c, _RUNTIME, compiler.version, dep, 4e6)
                        runtimes[rkey] = runtime
                    graph.stacks[runtime] |= bit
                self.toolchains[(c, i)] = (package, node, wrapper, runtime)

    def _tool(
        self, c: int, name: str, version: str, deps: list[tuple[str, int, int]], size: float
    ) -> int:
        """A compiler-wrapper or gcc-runtime node (a binary; its stacks are set by the caller)."""
        rng, texts = self.rng, self.graph.texts
        fields = (
            texts(_quote(version)),
            self._arch(c),
            texts(_quote("builtin")),
            self._params([("build_system", "generic")], 0),
            self.graph.no_text,
            self.v5,
        )
        return self.graph.add(
            rng, name, fields, _BINARY, 0, int(size * rng.uniform(0.8, 1.25)), deps
        )

    def _compiler(self, context: _Context, compiler: _Compiler) -> int:
        """An external compiler, as Spack 1.x records one found on the system."""
        texts = self.graph.texts
        package, languages = _COMPILER_PACKAGES[compiler.name]
        prefix = (
            "/usr" if package in ("gcc", "apple-clang") else f"/opt/{package}/{compiler.version}"
        )
        commands = _COMPILER_COMMANDS[package]
        paths = {
            key: f"{prefix}/bin/{command}"
            for key, command in zip(("c", "cxx", "fortran"), commands, strict=True)
            if command
        }
        external = {"path": prefix, "module": None, "extra_attributes": {"compilers": paths}}
        variants = [("build_system", "generic"), ("languages", list(languages))]
        fields = (
            texts(_quote(compiler.version)),
            self._family_arch(context),
            texts(_quote("builtin")),
            self._params(variants, 0),
            texts(f'"external":{_compact(external)},'),
            self.v5,
        )
        return self.graph.add(self.rng, package, fields, 0, 0, 0, [])

    def _externals(self, packages: list[_Package]) -> None:
        """Some stacks take some packages from the system: external nodes, not pushed."""
        rng, texts = self.rng, self.graph.texts
        external = texts(f'"external":{_compact({"path": "/usr", "module": None})},')
        for p, package in enumerate(packages):
            if package.name not in _EXTERNAL_CANDIDATES:
                continue
            build = ("build_system", package.build_system)
            for route in package.routes:
                if rng.random() >= _EXTERNAL_SHARE:
                    continue
                version = texts(_quote(rng.choice(package.versions)))
                for c in route.contexts:
                    fields = (
                        version,
                        self._family_arch(self.contexts[c]),
                        texts(_quote(package.namespace)),
                        self._params([build, *package.configs[0].variants], 0),
                        external,
                        self.v5,
                    )
                    node = self.graph.add(rng, package.name, fields, 0, 0, 0, [])
                    self.external_of[(c, p)] = node

    def _regular(self, packages: list[_Package]) -> None:
        """The packages' own nodes, package by package in dependency order."""
        rng, graph, config = self.rng, self.graph, self.config
        assert sum(1 for f in graph.flags if f & _BINARY) == self.infrastructure
        total, not_pushed = sum(p.count for p in packages), self.not_pushed
        picked = rng.sample(range(total), not_pushed + config.dangling)
        role = bytearray(total)
        for serial in picked[:not_pushed]:
            role[serial] = 1
        for serial in picked[not_pushed:]:
            role[serial] = 2
        pools = _Pools(self.contexts)
        texts = graph.texts
        serial = 0
        for p, package in enumerate(packages):
            version_texts = [texts(_quote(v)) for v in package.versions]
            namespace = texts(_quote(package.namespace))
            params: dict[tuple[int, int], int] = {}
            for _ in range(package.count):
                route = package.routes[_pick(rng, package.route_cum)]
                c = route.contexts[_pick(rng, route.arch_cum)]
                compiler = _pick(rng, route.compiler_cum)
                stacks = 1 << route.stack
                partners = route.partners[c]
                if partners and rng.random() < _SECOND_STACK_SHARE:
                    stacks |= 1 << partners[int(rng.random() * len(partners))]
                version = _pick(rng, package.version_cum)
                k = _pick(rng, package.config_cum)
                flags = 1 + int(rng.random() * len(_FLAG_SETS)) if rng.random() < _FLAG_SHARE else 0
                key = (k, flags)
                if key not in params:
                    build = ("build_system", package.build_system)
                    params[key] = self._params([build, *package.configs[k].variants], flags)
                deps = [
                    (package.deps[j].name, self._resolve(pools, package.deps[j].package, c),
                     package.deps[j].kind)
                    for j in package.configs[k].deps
                ]  # fmt: skip
                annotations = self.v5
                if package.languages:
                    stack = self.stacks[route.stack]
                    if rng.random() < _MIGRATED_SHARE:
                        annotations = self._migrated(stack.compilers[compiler])
                    else:
                        deps.extend(self._toolchain(package.languages, c, compiler))
                if role[serial] == 2:
                    fallback = packages[1 if p == 0 and len(packages) > 1 else 0].name
                    self._dangle(deps, len(package.configs[k].deps), fallback)
                binary = role[serial] != 1
                fields = (
                    version_texts[version],
                    self._arch(c),
                    namespace,
                    params[key],
                    graph.no_text,
                    annotations,
                )
                size = int(package.size * rng.uniform(0.8, 1.25)) if binary else 0
                node = graph.add(
                    rng, package.name, fields, _BINARY if binary else 0,
                    stacks if binary else 0, size, deps,
                )  # fmt: skip
                pools.add(p, c, node)
                serial += 1

    def _resolve(self, pools: _Pools, package: int, context: int) -> int:
        found = self.external_of.get((context, package))
        if found is not None:
            return found
        pool = pools.nearest(package, context)
        roll = self.rng.random()
        if roll < _CANONICAL_SHARE:
            return pool[0]
        return pool[int(len(pool) * (roll - _CANONICAL_SHARE) / (1 - _CANONICAL_SHARE))]

    def _toolchain(
        self, languages: tuple[str, ...], context: int, compiler: int
    ) -> list[tuple[str, int, int]]:
        """The compiler edge (with its language virtuals), compiler-wrapper, gcc-runtime."""
        package, node, wrapper, runtime = self.toolchains[(context, compiler)]
        supported = _COMPILER_PACKAGES_BY_PACKAGE[package]
        virtuals = tuple(v for v in languages if _LANGUAGE_OF[v] in supported) or ("c",)
        kinds = self.graph.edge_kinds
        out = [
            (package, node, kinds(_edge(("build",), virtuals))),
            (_WRAPPER, wrapper, self.edge_build),
        ]
        if runtime >= 0:
            out.append((_RUNTIME, runtime, self.edge_link))
        return out

    def _migrated(self, compiler: _Compiler) -> int:
        """Annotations of a node read from an older spec format: the compiler is kept there."""
        annotations = {
            "original_specfile_version": 4,
            "compiler": f"{compiler.name}@={compiler.version}",
        }
        return self.graph.texts(_compact(annotations))

    def _dangle(self, deps: list[tuple[str, int, int]], own: int, fallback: str) -> None:
        """Point an edge (the first of the package's own, else a new one) at a node that no
        index holds, as when a dependency was pruned from the cache."""
        if own:
            name, _, kind = deps[0]
            i = 0
        else:
            name, kind, i = fallback, self.graph.edge_kinds(_edge(("build", "link"), ())), len(deps)
            deps.append((name, 0, kind))
        texts = self.graph.texts
        fields = (texts(_quote("1.0")), self.arch_ids[0][0], texts(_quote("builtin")),
                  self._params([], 0), self.graph.no_text, self.v5)  # fmt: skip
        deps[i] = (name, self.graph.add(self.rng, name, fields, _OMITTED, 0, 0, []), kind)

    def package_hash(self, node: int) -> str:
        """Spack's hash of the package recipe: one per name and version."""
        graph = self.graph
        key = (graph.name[node], graph.version[node])
        found = self._package_hashes.get(key)
        if found is None:
            text = f"{graph.names.items[key[0]]}@{graph.texts.items[key[1]]}"
            digest = hashlib.sha256(text.encode()).digest()
            found = self._package_hashes[key] = base64.b32encode(digest).decode().lower()
        return found


class _Pools:
    """The nodes of each package, by context, by (platform, os), by platform, and all."""

    def __init__(self, contexts: list[_Context]) -> None:
        self.os_of = _dense([(c.platform, c.os) for c in contexts])
        self.platform_of = _dense([c.platform for c in contexts])
        self.by: dict[tuple[int, int, int], array[int]] = {}

    def add(self, package: int, context: int, node: int) -> None:
        for key in (
            (package, 0, context),
            (package, 1, self.os_of[context]),
            (package, 2, self.platform_of[context]),
            (package, 3, 0),
        ):
            pool = self.by.get(key)
            if pool is None:
                pool = self.by[key] = array("I")
            pool.append(node)

    def nearest(self, package: int, context: int) -> array[int]:
        """The package's nodes closest to `context` (a dependency of a package comes first)."""
        by = self.by
        return (
            by.get((package, 0, context))
            or by.get((package, 1, self.os_of[context]))
            or by.get((package, 2, self.platform_of[context]))
            or by[(package, 3, 0)]
        )


def _dense(keys: Sequence[Hashable]) -> list[int]:
    """A number per key, equal for equal keys, in the order first seen."""
    numbers: dict[Hashable, int] = {}
    return [numbers.setdefault(key, len(numbers)) for key in keys]
