"""The search index: page parsing, index build, and queries over a built index.

Nothing here knows about GraphQL or HTTP; `schema/` and `server/` build on it.
"""
