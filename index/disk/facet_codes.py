"""The codes of every single-valued facet field, a row of them per spec.

A result's facets count its values of several fields (compilers, oss, versions, ...):
field by field, that is a gather and a count each, and each of numpy's calls costs a few
µs in a server (one in a loop of them). With the fields side by side, each field's
value ids shifted past those of the fields before it, one gather reads a result's values
of all of them and one count counts them (`Facets`). Made as a tag loads (18 ms for a tag
of 570,000 specs), 2 bytes a field a spec while the ids fit, else 4.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from cachegql.index.disk.columns import Column, IdArray

__all__ = ["FacetCodes"]


class FacetCodes:
    """Each spec's value ids of `fields`, the ids of a field starting at `starts[field]`."""

    def __init__(self, columns: Mapping[str, Column], fields: Sequence[str]) -> None:
        self.starts: dict[str, int] = {}
        self.sizes: dict[str, int] = {}
        total = 0
        for name in fields:
            self.starts[name], self.sizes[name] = total, len(columns[name].values)
            total += self.sizes[name]
        self.size = total
        num_rows = len(columns[fields[0]].codes) if fields else 0
        dtype = np.uint16 if total <= 1 << 16 else np.uint32
        self.matrix: npt.NDArray[np.unsignedinteger] = np.empty((num_rows, len(fields)), dtype)
        for position, name in enumerate(fields):
            self.matrix[:, position] = columns[name].codes
            self.matrix[:, position] += self.starts[name]
        self.matrix.flags.writeable = False

    def count(self, rows: IdArray | None, span: tuple[int, int] | None) -> npt.NDArray[np.int64]:
        """Specs per value id of every field, over `rows` or, when given, the rows of
        `span` (read in place)."""
        if span is not None:
            taken = self.matrix[span[0] : span[1]]
        else:
            assert rows is not None
            taken = self.matrix.take(rows, axis=0)
        counts: npt.NDArray[np.int64] = np.bincount(taken.ravel(), minlength=self.size)
        return counts

    def of(self, counts: npt.NDArray[np.int64], field: str) -> npt.NDArray[np.int64]:
        """`field`'s part of `count`'s counts, by its own value ids (a view)."""
        start = self.starts[field]
        return counts[start : start + self.sizes[field]]
