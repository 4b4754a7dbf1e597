"""The GraphQL schema: strawberry types, inputs and thin resolvers over `index`.

Nothing here knows about HTTP; `server/` mounts the schema on an ASGI app.
"""
