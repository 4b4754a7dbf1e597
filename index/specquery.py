"""Spack spec syntax in queries (`hdf5@1.14: +mpi %gcc@13`)."""

from __future__ import annotations

from index.criteria import CriteriaError
from index.plan import Node
from index.snapshot import Snapshot


def query_node(snapshot: Snapshot, text: str) -> Node:
    raise CriteriaError("the 'query' argument (Spack spec syntax) is not supported yet")
