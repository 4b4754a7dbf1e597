"""Spack's vocabulary: versions and their order, variants, compilers, hashes, spec syntax."""

from cachegql.index.spack.compilers import Compiler, parse_compiler
from cachegql.index.spack.hashes import (
    HASH_ALPHABET,
    HASH_LENGTH,
    SHORT_HASH_LENGTH,
    is_hash,
    normalize_prefix,
)
from cachegql.index.spack.specformat import format_spec
from cachegql.index.spack.specsyntax import (
    SpecQuery,
    SpecQueryError,
    SpecSyntaxError,
    UnsupportedSpecError,
    parse_spec_query,
)
from cachegql.index.spack.variants import Variant, parse_variant
from cachegql.index.spack.versions import VersionRange, parse_constraint, sort_versions, version_key

__all__ = [
    "HASH_ALPHABET",
    "HASH_LENGTH",
    "SHORT_HASH_LENGTH",
    "Compiler",
    "SpecQuery",
    "SpecQueryError",
    "SpecSyntaxError",
    "UnsupportedSpecError",
    "Variant",
    "VersionRange",
    "format_spec",
    "is_hash",
    "normalize_prefix",
    "parse_compiler",
    "parse_constraint",
    "parse_spec_query",
    "parse_variant",
    "sort_versions",
    "version_key",
]
