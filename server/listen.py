"""Several workers, a listening socket each: the kernel spreads new connections across them.

uvicorn's workers share the one socket its parent binds, and the worker woken first takes
every connection waiting on it: 16 keep-alive clients connecting at once can all land on
one worker, which answers them alone while the other idles (16 to 0 in 3 of 20 starts
measured, 15 to 1 in one more: docs/performance.md). Here each worker listens on a socket
of its own, bound to the same address with `SO_REUSEPORT`, and the kernel hashes each new
connection to one of them: they split as coin tosses do.

The parent keeps a socket bound to the address (not listening, so it is given no
connection) for the server's life: it holds the port number, also one the system chose
for port 0, and it is the socket uvicorn's supervisor sends each worker it starts or
restarts. Pickled to a worker, as the supervisor sends sockets, it arrives as a new socket
bound to that address (`_HeldPort.__reduce__`).

Another server must not join the port: `SO_REUSEPORT` lets any socket of the same user
that asks for it share the connections, each server answering some from its own index.
So the address is first bound once without `SO_REUSEPORT`, which fails if anything
listens there; and the held socket does without `SO_REUSEADDR`, so that a later server's
such bind fails on it too, while this server's workers are still loading. (A server with
a shared socket, uvicorn's, still loading holds its port with `SO_REUSEADDR` and not
listening: this one then binds too, and whichever listens second fails, as two such
uvicorn servers do.)

What it costs: a worker that is stopped, or blocked without answering uvicorn's health
check, keeps being given its share of new connections until the supervisor ends it (5 s),
and the connections waiting in its queue then are reset, where with a shared socket the
other workers would take them (Linux 5.14 and later hand them to the others with
`net.ipv4.tcp_migrate_req=1`); a worker merely slow keeps its queue until it is free.
Linux only (where `SO_REUSEPORT` spreads TCP connections); elsewhere, or with `cachegql
serve --shared-socket`, the workers share one socket, as uvicorn's do.

Whatever the workers, the address is held before anything says the server listens: one
already in use is said as such (`CannotListenError`), not after a line giving the URL, and
`on_listening` is called only once it is held (with uvicorn's other ways of listening, a
file descriptor or a Unix socket, before uvicorn starts). One worker, or workers sharing a
socket, listen on it at once; `--host` is bound as given, a name to its first IPv4
address and an address with a `:` as IPv6, as the workers with a socket each are.

Either way, a worker that cannot start (it exits with uvicorn's `STARTUP_FAILURE`: its
index cannot be loaded, its socket cannot be bound) stops uvicorn's supervisor, which the
next would fail as well; the supervisor then returns as if asked to stop, and `run`
raises `WorkerStartError`, so that the server's exit says it failed.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import socket
import sys
from collections.abc import Callable
from typing import Any

import uvicorn
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors import Multiprocess

__all__ = ["SOCKET_PER_WORKER", "CannotListenError", "WorkerStartError", "hold_port", "run"]

SOCKET_PER_WORKER = sys.platform == "linux" and hasattr(socket, "SO_REUSEPORT")
"""Whether this system can give each worker a socket of its own on one port."""

_logger = logging.getLogger("uvicorn.error")


class CannotListenError(Exception):
    """The address cannot be held: something listens there, or it is not this machine's."""


class WorkerStartError(Exception):
    """A worker could not start (its own error is logged before): the server stopped."""


def run(
    app: Any,
    *,
    socket_per_worker: bool = True,
    on_listening: Callable[[], None] = lambda: None,
    **options: Any,
) -> None:
    """`uvicorn.run(app, **options)`, where several workers on a host and port each listen
    on a socket of its own if the system can (`SOCKET_PER_WORKER`) and `socket_per_worker`
    asks for it. Several workers import the app: it is then an import string (TypeError
    otherwise). CannotListenError when the address cannot be held, WorkerStartError when
    a worker could not start."""
    if any(options.get(o) for o in ("uds", "fd", "reload")):  # uvicorn's own ways, left to it
        on_listening()
        uvicorn.run(app, **options)
        return
    if (options.get("workers") or 1) > 1 and not isinstance(app, str):
        raise TypeError("several workers import the app: give it as 'module:attribute'")
    config = uvicorn.Config(app, **options)
    one = config.workers <= 1
    if one or not (socket_per_worker and SOCKET_PER_WORKER):
        with _plain_socket(config.host, config.port, config.backlog) as listening:
            shared = "" if one else f", {config.workers} workers sharing its socket"
            _logger.info("listening on http://%s%s", _shown(listening.getsockname()), shared)
            on_listening()
            if one:
                _serve_one(config, listening)
            else:
                _supervise(config, listening)
        return
    with hold_port(config.host, config.port) as held:
        _logger.info(
            "listening on http://%s, %d workers with a socket each",
            _shown(held.getsockname()),
            config.workers,
        )
        on_listening()
        _supervise(config, held)


def _serve_one(config: uvicorn.Config, listening: socket.socket) -> None:
    """What `uvicorn.run` does with one worker, on a socket already bound."""
    server = uvicorn.Server(config)
    with contextlib.suppress(KeyboardInterrupt):  # a stop, as `uvicorn.run` takes it
        server.run(sockets=[listening])
    if not server.started:  # its app's start failed (its error is logged)
        sys.exit(STARTUP_FAILURE)


def _supervise(config: uvicorn.Config, listening: socket.socket) -> None:
    """uvicorn's supervisor of `config.workers` processes given `listening`, until it
    stops; WorkerStartError when it stopped because a worker could not start."""
    try:
        supervisor = Multiprocess(config, sockets=[listening])
        supervisor.run()
    except KeyboardInterrupt:  # before its own handlers: a stop, as `uvicorn.run` takes it
        return
    failed = [p.pid for p in supervisor.processes if p.exitcode == STARTUP_FAILURE]
    if failed:
        raise WorkerStartError(
            f"worker process {failed[0]} could not start (its error is above), "
            "so the server stopped"
        )


def hold_port(host: str, port: int) -> socket.socket:
    """A socket bound to (`host`, `port`) that each worker it is sent to receives as a socket
    of its own on that address; CannotListenError when something listens there."""
    family = _family(host)
    try:
        with socket.socket(family) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
            address = probe.getsockname()
        held = _HeldPort(family)
        try:
            held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            try:
                held.bind(address)
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE:
                    raise
                # A socket without SO_REUSEPORT that does not listen: connections in
                # TIME_WAIT of a server run before with a shared socket, or such a server
                # still loading (which then fails to listen). Bound over it, and then
                # without the option again, on which a later server's probe fails.
                held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                held.bind(address)
                held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 0)
        except OSError:
            held.close()
            raise
    except OSError as exc:
        raise _cannot_listen(host, port, exc) from None
    return held


def _family(host: str) -> socket.AddressFamily:
    """The address family `--host` is bound in: IPv6 for an address with a `:`, else IPv4
    (a name: its first IPv4 address)."""
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def _cannot_listen(host: str, port: int, exc: OSError) -> CannotListenError:
    return CannotListenError(f"cannot listen on {_shown((host, port))}: {exc}")


def _plain_socket(host: str, port: int, backlog: int) -> socket.socket:
    """A socket listening on (`host`, `port`), bound as uvicorn binds its own
    (`SO_REUSEADDR`), for one process or workers sharing it; CannotListenError when it
    cannot be. Listening at once: a socket merely bound shares its port with another such
    one, and whichever listened second would fail later, once the URL had been said."""
    sock = socket.socket(_family(host))
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        raise _cannot_listen(host, port, exc) from None
    sock.set_inheritable(True)
    return sock


class _HeldPort(socket.socket):
    """The parent's socket on the port, which a worker receives as a new socket of its own."""

    def __reduce__(self) -> tuple[Any, tuple[int, Any]]:
        return _bound, (self.family, self.getsockname())


def _bound(family: int, address: Any) -> socket.socket:
    """In a worker: its own socket on the parent's address (uvicorn makes it listen)."""
    sock = socket.socket(family)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        # A start failure: uvicorn's supervisor then stops, rather than start it again.
        _logger.error("cannot listen on %s: %s", _shown(address), exc)
        sys.exit(STARTUP_FAILURE)
    return sock


def _shown(address: Any) -> str:
    host, port = address[:2]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
