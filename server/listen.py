"""Several workers, a listening socket each: the kernel spreads new connections across them.

uvicorn's workers share the one socket its parent binds, and the worker woken first takes
every connection waiting on it: 16 keep-alive clients connecting at once can all land on
one worker, which answers them alone while the other idles (16 to 0 in one round of nine
measured, at 56% of the rate of an 8 to 8 split: docs/performance.md). Here each worker
listens on a socket of its own, bound to the same address with `SO_REUSEPORT`, and the
kernel hashes each new connection to one of them: they split as coin tosses do.

The parent keeps a socket bound to the address (not listening, so it is given no
connection) for the server's life: it holds the port number, also one the system chose
for port 0, and it is the socket uvicorn's supervisor sends each worker it starts or
restarts. Pickled to a worker, as the supervisor sends sockets, it arrives as a new socket
bound to that address (`_HeldPort.__reduce__`).

Before binding it, the address is bound once without `SO_REUSEPORT`: that fails if anything
listens there, another `cachegql serve` included, which `SO_REUSEPORT` alone would let in
to share the connections.

What it costs: connections waiting in a worker's own queue when it dies are reset, where a
shared socket leaves them to the others. Linux only (where `SO_REUSEPORT` spreads TCP
connections); elsewhere, with one worker, or with `cachegql serve --shared-socket`, uvicorn
runs as it does on its own.
"""

from __future__ import annotations

import logging
import socket
import sys
from typing import Any

import uvicorn
from uvicorn.supervisors import Multiprocess

__all__ = ["SOCKET_PER_WORKER", "hold_port", "run"]

SOCKET_PER_WORKER = sys.platform == "linux" and hasattr(socket, "SO_REUSEPORT")
"""Whether this system can give each worker a socket of its own on one port."""

_logger = logging.getLogger("uvicorn.error")


def run(app: Any, *, socket_per_worker: bool = True, **options: Any) -> None:
    """`uvicorn.run(app, **options)`, with several workers listening on a socket each
    where the system can (`SOCKET_PER_WORKER`) and `socket_per_worker` asks for it."""
    if not (socket_per_worker and SOCKET_PER_WORKER and options.get("workers", 1) > 1):
        uvicorn.run(app, **options)
        return
    config = uvicorn.Config(app, **options)
    with hold_port(config.host, config.port) as held:
        host, port = held.getsockname()[:2]
        _logger.info(
            "listening on http://%s:%d, %d workers with a socket each",
            f"[{host}]" if held.family == socket.AF_INET6 else host,
            port,
            config.workers,
        )
        Multiprocess(config, sockets=[held]).run()


def hold_port(host: str, port: int) -> socket.socket:
    """A socket bound to (`host`, `port`) that each worker it is sent to receives as a socket
    of its own on that address; OSError when something already listens there."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((host, port))
        address = probe.getsockname()
    held = _HeldPort(family)
    try:
        _share_address(held)
        held.bind(address)
    except OSError:
        held.close()
        raise
    return held


class _HeldPort(socket.socket):
    """The parent's socket on the port, which a worker receives as a new socket of its own."""

    def __reduce__(self) -> tuple[Any, tuple[int, Any]]:
        return _bound, (self.family, self.getsockname())


def _bound(family: int, address: Any) -> socket.socket:
    """In a worker: its own socket on the parent's address (uvicorn makes it listen)."""
    sock = socket.socket(family)
    _share_address(sock)
    sock.bind(address)
    return sock


def _share_address(sock: socket.socket) -> None:
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
