"""The ASGI server and the `cachegql` command line: wires `index` and `schema` together."""
