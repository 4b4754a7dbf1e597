"""Credentials for OCI registries, found where Spack users already keep them, and the
registry's `WWW-Authenticate` challenges answered as Spack answers them.

A credential is a username and a password (or a token used as the password), taken
from environment variables named on the command line (Spack's `--oci-username-variable`
and `--oci-password-variable`) or from `~/.docker/config.json` (`docker login`). Without
one, pulls are anonymous: a `Bearer` challenge is answered with an anonymous token.
The password is never part of a message: `Credential.describe()` says which username
and where it came from, and nothing else.
"""

from __future__ import annotations

import base64
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import orjson

__all__ = ["Challenge", "Credential", "CredentialError", "docker_config_path", "find_credential"]

_PARAMETER = re.compile(r'(\w+)="([^"]*)"')


class CredentialError(Exception):
    """A credential named on the command line that is not there."""


@dataclass(frozen=True)
class Credential:
    username: str
    password: str = field(repr=False)  # never printed, not even by repr()
    origin: str

    def describe(self) -> str:
        """Which credential was tried, without its secret."""
        return f"username {self.username!r} from {self.origin}"

    def basic(self) -> str:
        """The value of a basic `Authorization` header."""
        pair = f"{self.username}:{self.password}".encode()
        return "Basic " + base64.b64encode(pair).decode("ascii")


@dataclass(frozen=True)
class Challenge:
    """A parsed `WWW-Authenticate` header: `Basic realm=...` or `Bearer realm=...,service=...`."""

    scheme: str
    parameters: dict[str, str]

    @classmethod
    def parse(cls, header: str) -> Challenge:
        scheme, _, rest = header.strip().partition(" ")
        return cls(scheme.lower(), dict(_PARAMETER.findall(rest)))


def docker_config_path() -> Path:
    """Where `docker login` keeps credentials (`$DOCKER_CONFIG/config.json`)."""
    folder = os.environ.get("DOCKER_CONFIG")
    return Path(folder) / "config.json" if folder else Path.home() / ".docker" / "config.json"


def find_credential(
    host: str, username_variable: str | None = None, password_variable: str | None = None
) -> Credential | None:
    """The credential for `host`: from the variables named, else from docker's config."""
    if username_variable or password_variable:
        return _from_environment(username_variable, password_variable)
    return _from_docker_config(host, docker_config_path())


def _from_environment(username_variable: str | None, password_variable: str | None) -> Credential:
    if not username_variable or not password_variable:
        raise CredentialError(
            "give both --oci-username-variable and --oci-password-variable (the names of the "
            "environment variables that hold the username and the password or token)"
        )
    missing = [v for v in (username_variable, password_variable) if v not in os.environ]
    if missing:
        raise CredentialError(
            f"environment variable {', '.join(missing)} is not set "
            "(named by --oci-username-variable/--oci-password-variable)"
        )
    return Credential(
        os.environ[username_variable],
        os.environ[password_variable],
        f"environment variables {username_variable}/{password_variable}",
    )


def _from_docker_config(host: str, path: Path) -> Credential | None:
    """`auths.<host>.auth` (base64 `user:password`) of docker's config, when there is one."""
    try:
        document = orjson.loads(path.read_bytes())
        auths = document.get("auths", {})
        entry = next(
            (v for k, v in auths.items() if _registry_host(k) == host and isinstance(v, dict)),
            None,
        )
        if entry is None or not isinstance(entry.get("auth"), str):
            return None
        username, _, password = base64.b64decode(entry["auth"]).decode().partition(":")
    except (OSError, ValueError, AttributeError):
        return None  # no config (or not one we can read): anonymous, as docker itself would
    return Credential(username, password, f"{path} (auths.{host})") if username else None


def _registry_host(key: str) -> str:
    """`https://host:port/v1/` or `host:port` -> `host:port`."""
    return re.sub(r"^\w+://", "", key).split("/", 1)[0]
