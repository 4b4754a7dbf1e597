"""An independent reading of pages, for expected values: regexes and json, nothing from `index`.

Tests compare what the API answers with what this module computes straight from the page text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

_LINE = re.compile(r"^(title|categories|spec_details): (.*)$", re.MULTILINE)


def read_specs(paths: Iterable[Path]) -> dict[str, dict[str, dict[str, Any]]]:
    """{tag: {hash: spec}} of every page under `paths` that has spec_details; first hash wins."""
    tags: dict[str, dict[str, dict[str, Any]]] = {}
    for path in _files(paths):
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if not text.startswith("---") or "\nlayout: cache" not in text:
            continue
        fields = dict(_LINE.findall(text.split("\n---", 1)[0]))
        if "spec_details" not in fields:
            continue
        title = json.loads(fields["title"])
        tag = fields["categories"].strip("[]").split(",")[1].strip()
        for spec in json.loads(fields["spec_details"]):
            spec = dict(spec, name=title, tag=tag)
            tags.setdefault(tag, {}).setdefault(spec["hash"], spec)
    return tags


def _files(paths: Iterable[Path]) -> Iterable[Path]:
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.is_file())
        else:
            yield path


def compiler_normalized(raw: str) -> str:
    return raw.replace("@=", "@")


def variant_atoms(raw: str) -> set[str]:
    """`+x` -> {x=true}; `k=a,b` / `k:=a,b` / `k='a,b'` -> {k=a, k=b}."""
    if raw[0] in "+~-":
        return {f"{raw[1:]}={'true' if raw[0] == '+' else 'false'}"}
    name, value = re.split(r":=|==|=", raw, maxsplit=1)
    value = value.strip("'\"")
    return {f"{name}={v}" for v in value.split(",")}


def spec_atoms(spec: dict[str, Any]) -> set[str]:
    return set().union(*(variant_atoms(v) for v in spec["variants"])) if spec["variants"] else set()


def default_order(specs: Iterable[dict[str, Any]]) -> list[str]:
    """Hashes in the API's default order: package name, then hash."""
    return [s["hash"] for s in sorted(specs, key=lambda s: (s["name"], s["hash"]))]


def counts(values: Iterable[str]) -> list[dict[str, Any]]:
    """Buckets as the API returns them: count descending, then value ascending."""
    tally: dict[str, int] = {}
    for value in values:
        tally[value] = tally.get(value, 0) + 1
    return [{"value": v, "count": c} for v, c in sorted(tally.items(), key=lambda i: (-i[1], i[0]))]


def tag_diff(
    old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """{package: {added, removed: sorted hashes, unchanged: count}} between two tags'
    {hash: spec}, for the packages with a hash added or removed, by name. A spec is its
    hash; an added or kept one counts in its package in `new`, a removed one in `old`."""
    packages: dict[str, dict[str, Any]] = {}

    def entry(spec: dict[str, Any]) -> dict[str, Any]:
        return packages.setdefault(spec["name"], {"added": [], "removed": [], "unchanged": 0})

    for digest, spec in new.items():
        if digest in old:
            entry(spec)["unchanged"] += 1
        else:
            entry(spec)["added"].append(digest)
    for digest, spec in old.items():
        if digest not in new:
            entry(spec)["removed"].append(digest)
    return {
        name: {**p, "added": sorted(p["added"]), "removed": sorted(p["removed"])}
        for name, p in sorted(packages.items())
        if p["added"] or p["removed"]
    }
