"""How a server's workers split the connections of a load (Linux: read from /proc).

With several workers, a load of 16 keep-alive connections is answered at the rate of the
split: 16 to 0 keeps one worker busy and the other idle. The benchmark prints the split
beside each rate so that a rate is read with it.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["connections_per_worker"]

_LISTEN = "0A"
_ESTABLISHED = "01"


def connections_per_worker(pids: list[int], port: int) -> list[int]:
    """Connections each worker among `pids` (a server's child processes) holds on `port`,
    most first; a child that does not listen on the port (a resource tracker) is left out."""
    states = _sockets(port)
    counts = []
    for pid in pids:
        inodes = _socket_inodes(pid)
        if any(states.get(inode) == _LISTEN for inode in inodes):
            counts.append(sum(states.get(inode) == _ESTABLISHED for inode in inodes))
    return sorted(counts, reverse=True)


def _sockets(port: int) -> dict[str, str]:
    """The inode and state of each TCP socket whose local port is `port`."""
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        path = Path(table)
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port:
                found[fields[9]] = fields[3]
    return found


def _socket_inodes(pid: int) -> list[str]:
    inodes = []
    try:
        links = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:  # gone, or not ours to read
        return []
    for link in links:
        try:
            target = str(link.readlink())
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.append(target[8:-1])
    return inodes
