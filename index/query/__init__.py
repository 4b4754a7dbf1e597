"""Answering questions over a loaded index: criteria, the planner, search, facets, stacks."""
