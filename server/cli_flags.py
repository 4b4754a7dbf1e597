"""The flags several commands share, declared once."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

__all__ = ["ExamplesHelp", "above", "add_s3_endpoint", "at_least", "label", "port"]


class ExamplesHelp(argparse.HelpFormatter):
    """Help whose description is wrapped to the terminal, as argparse does, and whose
    examples (an epilog starting `examples:`) are printed as they are written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("examples:"):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def port(text: str) -> int:
    """A TCP port to listen on, 1 to 65535 (a larger one would be taken modulo 65536)."""
    number = int(_parsed(int, text))
    if not 1 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 1 to 65535, got {text}")
    return number


def label(text: str) -> str:
    """A tag or stack label: not empty, which would name nothing a listing can name."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expected a name, got {text!r}")
    return text


def at_least(kind: type[int] | type[float], least: float) -> Callable[[str], float]:
    """A number of `kind`, `least` or more (0 where 0 turns a feature off, 1 for a count)."""

    def parse(text: str) -> float:
        number = _parsed(kind, text)
        if number < least:
            raise argparse.ArgumentTypeError(f"expected {least} or more, got {text}")
        return number

    return parse


def above(kind: type[int] | type[float], bound: float) -> Callable[[str], float]:
    """A number of `kind` greater than `bound` (a time that must not be 0)."""

    def parse(text: str) -> float:
        number = _parsed(kind, text)
        if number <= bound:
            raise argparse.ArgumentTypeError(f"expected more than {bound}, got {text}")
        return number

    return parse


def _parsed(kind: type[int] | type[float], text: str) -> int | float:
    noun = "a whole number" if kind is int else "a finite number"
    try:
        number = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {noun}, got {text!r}") from None
    if not math.isfinite(number):  # inf would pass "at least", then overflow later
        raise argparse.ArgumentTypeError(f"expected {noun}, got {text!r}")
    return number


def add_s3_endpoint(command: argparse.ArgumentParser) -> None:
    """`--s3-endpoint-url`, of `index` (for its sources and `--publish`) and `serve`."""
    command.add_argument(
        "--s3-endpoint-url",
        metavar="URL",
        help="for s3:// sources and stores: an S3-compatible store's endpoint (MinIO, Ceph, "
        "R2); default: AWS, or AWS_ENDPOINT_URL_S3; credentials from boto3's chain (AWS_* "
        "variables, profile, role), else requests are unsigned",
    )
