"""Parsing one page: every page shape of cache.spack.io, compilers, variants, meta checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cachegql.index.ingest import NotAPageError, Page, PageError, parse_page, read_page
from cachegql.index.ingest.pages import HEAD_BYTES
from cachegql.index.spack import Variant, parse_compiler, parse_variant
from tests.conftest import PAGES
from tests.page_factory import page_text, spec, write_page

CACHE = PAGES / "_cache"
HDF5 = CACHE / "develop" / "hdf5" / "specs.md"  # 2025 style: sorted keys, gcc@13.2.0
CUDNN = CACHE / "develop" / "cudnn" / "specs.md"  # compiler none, versions 8.9.7.29-12
TORCH_SCATTER = CACHE / "develop" / "py-torch-scatter" / "specs.md"  # 2024 style, @=, tarballs
CMAKE = CACHE / "v0.22.0" / "cmake" / "specs.md"
ZLIB_OLD = CACHE / "v0.22.0" / "zlib" / "specs.md"  # windows, msvc@=19.40.33811
ZLIB_LOOSE = PAGES / "loose" / "zlib-develop.txt"
LEGACY = CACHE / "develop" / "py-black" / "specs.md"
GOOD_PAGES = [HDF5, CUDNN, TORCH_SCATTER, CMAKE, ZLIB_OLD, ZLIB_LOOSE]


def _raw(variants: tuple[Variant, ...]) -> tuple[str, ...]:
    """Variants as the page wrote them."""
    return tuple(v.raw for v in variants)


def _by_hash(page: Page) -> dict[str, Any]:
    return {s.hash: s for s in page.specs}


# Each page shape, checked against the independent reading in tests/oracle.py


@pytest.mark.parametrize("path", GOOD_PAGES, ids=lambda p: str(p.relative_to(PAGES)))
def test_fixture_page_specs_match_the_page_text(
    path: Path, expected: dict[str, dict[str, dict[str, Any]]]
) -> None:
    """Every field of every spec is read as the page writes it; nothing is dropped."""
    page = read_page(path)
    assert page.problems == []
    assert page.path == str(path)
    oracle = {h: s for h, s in expected[page.tag].items() if s["name"] == page.package}
    if path == ZLIB_LOOSE:
        oracle = {h: s for h, s in oracle.items() if h in _by_hash(page)}
    assert sorted(_by_hash(page)) == sorted(oracle)
    for digest, record in _by_hash(page).items():
        want = oracle[digest]
        assert record.package == want["name"]
        assert record.tag == want["tag"]
        assert record.versions == tuple(want["versions"])
        assert record.compiler.raw == want["compiler"]
        assert (record.os, record.platform, record.target) == (
            want["os"],
            want["platform"],
            want["target"],
        )
        assert _raw(record.variants) == tuple(want["variants"])
        assert record.stacks == tuple(sorted(want["stacks"]))
        assert record.size == (None if want["size"] == "-" else want["size"])
        assert record.tarball == want.get("tarball")


@pytest.mark.parametrize(
    ("path", "package", "tag", "num_specs"),
    [
        (HDF5, "hdf5", "develop", 12),
        (CUDNN, "cudnn", "develop", 9),
        (TORCH_SCATTER, "py-torch-scatter", "develop", 9),
        (CMAKE, "cmake", "v0.22.0", 1),
        (ZLIB_OLD, "zlib", "v0.22.0", 2),
        (ZLIB_LOOSE, "zlib", "develop", 3),
    ],
    ids=["hdf5", "cudnn", "py-torch-scatter", "cmake", "zlib-v0.22.0", "zlib-loose-txt"],
)
def test_page_package_tag_and_count(path: Path, package: str, tag: str, num_specs: int) -> None:
    """The package comes from the title, the tag from the second category item."""
    page = read_page(path)
    assert (page.package, page.tag, len(page.specs)) == (package, tag, num_specs)


def test_2025_page_plain_compilers_and_variants_in_every_form() -> None:
    """hdf5 (sorted keys): gcc@13.2.0 as written; +x ~x k=v k:=v, multi-valued, quoted, raw."""
    specs = _by_hash(read_page(HDF5))
    cuda = specs["qm4i2hz4uep3enthjxjqi5ogz7kok3zv"]
    assert cuda.compiler.raw == "gcc@13.2.0"
    assert _raw(cuda.variants) == (
        "+cuda",
        "+mpi",
        "cuda_arch=70,80",
        "build_system=cmake",
        "languages='c,c++,fortran'",
    )
    rocm = specs["2mwufxbv54byvsehogfqrclri3qzj7uf"]
    assert "amdgpu_target:=gfx90a" in _raw(rocm.variants)
    assert "libs:=shared,static" in _raw(rocm.variants)
    assert "~shared" in _raw(specs["ujzdegxdncf32epf3dhodzdocis2jhtl"].variants)
    assert specs["br6qmw4wxfogo6mvn6a6wfhym6l3vfz5"].variants[-1].raw == "patches:=f42732a"
    assert specs["22xi2rdl3erbfqfoeqh5av2ricphkqdl"].versions == ("develop",)


def test_2024_page_keeps_raw_compiler_and_tarball() -> None:
    """py-torch-scatter (ordered keys): gcc@=11.4.0 kept raw, tarball URL read, numeric size."""
    specs = _by_hash(read_page(TORCH_SCATTER))
    first = specs["43tbic367aez54pgojjg5fcaioctiq3h"]
    assert first.compiler.raw == "gcc@=11.4.0"
    assert first.tarball is not None
    assert first.tarball.startswith("https://binaries.spack.io/develop/build_cache/")
    assert first.tarball.endswith("-43tbic367aez54pgojjg5fcaioctiq3h.spack")
    assert first.size is None  # "-"
    assert specs["gwncxvjcnqcnau2xltenc76e2gzjfkzr"].size == 123456
    assert specs["6uk3geqfng274loi25phssrrxqqm4plp"].compiler.raw == "apple-clang@=15.0.0"


def test_binary_only_page_compiler_none_and_dashed_versions() -> None:
    """cudnn: compiler `none`; versions like 8.9.7.29-12 stay whole strings."""
    page = read_page(CUDNN)
    assert {s.compiler.raw for s in page.specs} == {"none"}
    assert {v for s in page.specs for v in s.versions} == {
        "8.9.5.30-12",
        "8.9.7.29-11",
        "8.9.7.29-12",
        "9.8.0.87-12",
    }


def test_windows_page_msvc_compiler() -> None:
    """zlib v0.22.0 carries a windows spec built by msvc@=19.40.33811."""
    specs = _by_hash(read_page(ZLIB_OLD))
    windows = specs["kjwskkegy7mtic6udyfkozm6lnczkywh"]
    assert (windows.platform, windows.os, windows.compiler.raw) == (
        "windows",
        "windows0",
        "msvc@=19.40.33811",
    )


def test_loose_txt_page_is_read_by_content() -> None:
    """A page file with any name (here .txt, outside _cache/) reads like specs.md."""
    page = read_page(ZLIB_LOOSE)
    assert page.package == "zlib"
    assert "jpmccuhy5t2tp3yx44lba75p45l6zgei" in _by_hash(page)


def test_crlf_line_endings_read_like_lf() -> None:
    """A page saved with Windows line endings parses to the same specs."""
    text = HDF5.read_text(encoding="utf-8")
    lf = parse_page(text, "hdf5.md")
    crlf = parse_page(text.replace("\n", "\r\n"), "hdf5.md")
    assert crlf.specs == lf.specs
    assert crlf.problems == []


def test_page_longer_than_its_judged_start_is_read_whole(tmp_path: Path) -> None:
    """A file is judged a page from its first HEAD_BYTES; a longer page loads whole, even
    when `layout: cache` comes after a line longer than that start."""
    specs = [spec(f"long-{i}") for i in range(600)]
    long_page = write_page(tmp_path / "long.md", page_text(specs))
    note = json.dumps({"note": "x" * HEAD_BYTES})
    late = page_text(specs).replace("layout: cache\n", "").replace("---\n", "", 1)
    late_layout = write_page(tmp_path / "late.md", f"---\nmeta: {note}\nlayout: cache\n{late}")
    for path in (long_page, late_layout):
        assert path.stat().st_size > HEAD_BYTES
        page = read_page(path)
        assert len(page.specs) == 600
        assert page.problems == []


def test_byte_order_mark_before_front_matter_is_ignored() -> None:
    """A UTF-8 BOM (Windows editors write one) is not part of the first '---' line."""
    text = HDF5.read_text(encoding="utf-8")
    assert parse_page("\ufeff" + text, "hdf5.md").specs == parse_page(text, "hdf5.md").specs


# Pages that are not usable


def test_legacy_page_is_a_page_error_mentioning_legacy() -> None:
    """spec_names without spec_details: recognised as a page, refused with 'legacy'."""
    with pytest.raises(PageError, match="legacy"):
        read_page(LEGACY)


def test_readme_is_not_a_page() -> None:
    """A markdown file without front matter is NotAPageError, not a PageError."""
    with pytest.raises(NotAPageError):
        read_page(PAGES / "README.md")


def test_other_layout_is_not_a_page() -> None:
    """Front matter of another Jekyll layout is NotAPageError, naming the layout."""
    with pytest.raises(NotAPageError, match="post"):
        parse_page("---\ntitle: hello\nlayout: post\n---\nbody\n", "post.md")


def test_missing_file_is_a_page_error(tmp_path: Path) -> None:
    """A file that cannot be read says so."""
    with pytest.raises(PageError, match="cannot read file"):
        read_page(tmp_path / "gone.md")


# Compilers


@pytest.mark.parametrize(
    ("raw", "name", "version", "normalized"),
    [
        ("gcc@=11.4.0", "gcc", "11.4.0", "gcc@11.4.0"),
        ("gcc@11.4.0", "gcc", "11.4.0", "gcc@11.4.0"),
        ("apple-clang@=15.0.0", "apple-clang", "15.0.0", "apple-clang@15.0.0"),
        ("msvc@=19.40.33811", "msvc", "19.40.33811", "msvc@19.40.33811"),
        ("none", "none", None, "none"),
    ],
)
def test_parse_compiler(raw: str, name: str, version: str | None, normalized: str) -> None:
    """`@=` is dropped from the normalised form; the raw text is kept as written."""
    compiler = parse_compiler(raw)
    assert (compiler.name, compiler.version, compiler.normalized) == (name, version, normalized)
    assert compiler.raw == raw


@pytest.mark.parametrize("raw", ["", "gcc@", "gcc@=", "@11.4.0", "@"])
def test_parse_compiler_malformed(raw: str) -> None:
    """A compiler with no name, or an `@` with no version, is a ValueError naming it."""
    with pytest.raises(ValueError, match="malformed compiler"):
        parse_compiler(raw)


# Variants


@pytest.mark.parametrize(
    ("raw", "name", "value", "atoms"),
    [
        ("+mpi", "mpi", "true", ("mpi=true",)),
        ("~shared", "shared", "false", ("shared=false",)),
        ("-shared", "shared", "false", ("shared=false",)),
        ("build_system=cmake", "build_system", "cmake", ("build_system=cmake",)),
        ("amdgpu_target:=gfx90a", "amdgpu_target", "gfx90a", ("amdgpu_target=gfx90a",)),
        ("build_type==Release", "build_type", "Release", ("build_type=Release",)),
        ("patches:=f42732a", "patches", "f42732a", ("patches=f42732a",)),
        ("cuda_arch=80", "cuda_arch", "80", ("cuda_arch=80",)),
        ("cuda_arch=70,80", "cuda_arch", "70,80", ("cuda_arch=70", "cuda_arch=80")),
        (
            "languages='c,c++,fortran'",
            "languages",
            "c,c++,fortran",
            ("languages=c", "languages=c++", "languages=fortran"),
        ),
        ('languages="c,c++"', "languages", "c,c++", ("languages=c", "languages=c++")),
        ("libs:=shared,static", "libs", "shared,static", ("libs=shared", "libs=static")),
        ("shared=True", "shared", "true", ("shared=true",)),
    ],
)
def test_parse_variant(raw: str, name: str, value: str, atoms: tuple[str, ...]) -> None:
    """Each form reduces to name, value and one `name=value` atom per value; raw kept."""
    variant = parse_variant(raw)
    assert (variant.name, variant.value, variant.atoms) == (name, value, atoms)
    assert variant.raw == raw


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "   ",
        "+",
        "~",
        "mpi",
        "=cmake",
        "build_system=",
        "build_system= ",
        "k=a b",
        "k=''",
        "+mpi=1",
        "a b",
        "cuda_arch=,",
        "languages='c,c++",
    ],
)
def test_parse_variant_malformed(raw: str) -> None:
    """Anything but +x ~x -x k=v (with a value) is a ValueError naming the variant."""
    with pytest.raises(ValueError, match="malformed variant"):
        parse_variant(raw)


# meta versus spec_details


def _hdf5_with_meta(**changes: Any) -> str:
    """The hdf5 page with some meta fields replaced."""
    lines = HDF5.read_text(encoding="utf-8").split("\n")
    number = next(i for i, line in enumerate(lines) if line.startswith("meta: "))
    meta = json.loads(lines[number].removeprefix("meta: "))
    meta.update(changes)
    lines[number] = "meta: " + json.dumps(meta)
    return "\n".join(lines)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"num_specs": 99}, "num_specs"),
        ({"stacks": ["e4s", "root"]}, "stacks"),
        ({"compilers": ["gcc@13.2.0"]}, "compilers"),
        ({"num_specs_by_stack": {"root": 99}}, "num_specs_by_stack"),
        ({"versions": ["1.14.3"]}, "versions"),
        ({"targets": ["x86_64_v3", "ppc64le"]}, "targets"),
    ],
    ids=lambda v: v if isinstance(v, str) else "meta",
)
def test_meta_disagreement_is_reported_and_spec_details_kept(
    changes: dict[str, Any], field: str
) -> None:
    """Each meta field that disagrees is one problem naming it; all 12 specs still load."""
    page = parse_page(_hdf5_with_meta(**changes), "hdf5/specs.md")
    assert len(page.specs) == 12
    assert len(page.problems) == 1, [str(p) for p in page.problems]
    message = str(page.problems[0])
    assert message.startswith("hdf5/specs.md: ")
    assert f"meta disagrees with spec_details on {field}" in message
    assert "using spec_details" in message


def test_meta_disagreeing_on_several_fields_names_each() -> None:
    """Three disagreeing fields give three problems, one per field."""
    text = _hdf5_with_meta(num_specs=3, stacks=["root"], compilers=["gcc@13.2.0"])
    page = parse_page(text, "hdf5/specs.md")
    assert len(page.specs) == 12
    messages = " | ".join(str(p) for p in page.problems)
    for field in ("num_specs", "stacks", "compilers"):
        assert f"on {field}:" in messages


def test_meta_that_is_not_an_object_is_reported_and_ignored() -> None:
    """meta as a JSON list: one problem, the specs load."""
    page = parse_page(page_text([spec()], meta="[1, 2]"), "p.md")
    assert len(page.specs) == 1
    assert ["'meta' must be a JSON object" in str(p) for p in page.problems] == [True]


def test_meta_that_is_not_valid_json_keeps_spec_details() -> None:
    """spec_details is the truth: a broken meta line is reported, the specs still load."""
    page = parse_page(page_text([spec()], meta='{"num_specs": 1,'), "p.md")
    assert len(page.specs) == 1
    assert any("meta" in str(p) for p in page.problems)


def test_invalid_spec_is_skipped_with_its_position() -> None:
    """One bad spec is a problem naming its position and field; its neighbours load."""
    bad = spec("bad", versions="1.0")
    page = parse_page(page_text([spec("a"), bad, spec("b")]), "p.md")
    assert [s.hash for s in page.specs] == [spec("a")["hash"], spec("b")["hash"]]
    assert [str(p) for p in page.problems] == [
        f"p.md: spec #2 skipped: hash {bad['hash']}: 'versions' must be a list of non-empty strings"
    ]
