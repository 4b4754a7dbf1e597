"""The Dockerfile, checked where no Docker engine runs (`.ci/wheel-check` rehearses its
steps): hadolint clean, the build context no more than what it copies."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HADOLINT = Path(sys.executable).with_name("hadolint")


def test_hadolint_finds_nothing() -> None:
    done = subprocess.run(
        [str(HADOLINT), str(ROOT / "Dockerfile")], capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout) == (0, "")


def test_the_build_context_is_what_the_dockerfile_copies() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    copied: set[str] = set()
    for line in re.findall(r"^COPY (.+)$", dockerfile, re.MULTILINE):
        *sources, _ = line.split()
        copied.update(s.rstrip("/") for s in sources)
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    rules = [r for r in ignore if r and not r.startswith("#")]
    assert rules[0] == "*"  # everything out, then each copied path back in
    included = {r[1:].rstrip("/") for r in rules if r.startswith("!")}
    assert included == copied
    assert all((ROOT / path).exists() for path in copied)


def test_the_image_runs_unprivileged_with_a_healthcheck() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    (user,) = re.findall(r"^USER (\S+)$", dockerfile, re.MULTILINE)
    assert user not in ("root", "0")
    assert re.search(r"^HEALTHCHECK .*\n\s+CMD .*/readyz", dockerfile, re.MULTILINE)
    assert re.search(r"^FROM \S+@sha256:[0-9a-f]{64}$", dockerfile, re.MULTILINE)
