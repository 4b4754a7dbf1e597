"""Deterministic draws from one `random.Random`: weighted and distinct picks, apportioning,
spec hashes."""

from __future__ import annotations

import base64
import math
import random
from bisect import bisect
from collections.abc import Sequence
from itertools import accumulate

__all__ = ["_apportion", "_cum", "_distinct", "_front_weights", "_pick", "_spec_hash"]

_MASK40 = (1 << 40) - 1


def _pick(rng: random.Random, cum: Sequence[float]) -> int:
    """Index drawn with cumulative weights `cum` (cheaper than `Random.choices`)."""
    return bisect(cum, rng.random() * cum[-1])


def _cum(weights: Sequence[float]) -> tuple[float, ...]:
    """Cumulative weights, for `_pick`."""
    return tuple(accumulate(weights))


def _front_weights(n: int) -> tuple[float, ...]:
    """Cumulative weights favouring the first items of a list of `n`."""
    return _cum([1.0 / (i + 1) for i in range(n)])


def _distinct(rng: random.Random, cum: Sequence[float], k: int) -> list[int]:
    """`k` distinct indices drawn with cumulative weights, in draw order."""
    chosen: list[int] = []
    while len(chosen) < min(k, len(cum)):
        i = _pick(rng, cum)
        if i not in chosen:
            chosen.append(i)
    return chosen


def _apportion(total: int, weights: Sequence[float]) -> list[int]:
    """Split `total` into one integer >= 1 per weight, proportionally, summing exactly."""
    n = len(weights)
    rest = total - n
    scale = rest / math.fsum(weights)
    quotas = [w * scale for w in weights]
    counts = [1 + int(q) for q in quotas]
    left = total - sum(counts)
    by_fraction = sorted(range(n), key=lambda i: (int(quotas[i]) - quotas[i], i))
    for i in by_fraction[:left]:
        counts[i] += 1
    return counts


def _scramble40(n: int) -> int:
    """A bijection on 40-bit integers, so distinct serials give distinct, random-looking ends."""
    n = (n * 0x9E3779B97F) & _MASK40
    n ^= n >> 21
    n = (n * 0xBF58476D1D) & _MASK40
    return n ^ (n >> 19)


def _spec_hash(rng: random.Random, serial: int) -> str:
    """32 base32 characters: 120 random bits, then 40 bits unique to `serial`."""
    value = (rng.getrandbits(120) << 40) | _scramble40(serial)
    return base64.b32encode(value.to_bytes(20, "big")).decode("ascii").lower()
