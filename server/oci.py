"""Reading OCI registries for `cachegql index`: the index's `Reader` for `oci://` URLs.

Locations are Spack's image references: `oci://HOST[:PORT]/NAME:TAG` is a manifest,
`oci://HOST[:PORT]/NAME@sha256:HEX` a blob (`oci+http://` for a registry without TLS,
as in Spack). They are read through the registry's HTTP API (`/v2/NAME/manifests/TAG`,
`/v2/NAME/blobs/DIGEST`), answering its `WWW-Authenticate` challenges (server/oci_auth.py).

Revalidation is by digest: a manifest is asked for with the digest of the cached copy
(`If-None-Match`, 304 when the tag still points there) and a blob, named by its digest,
is not asked for at all when a copy with that digest is cached. Timeouts and retries of
transient failures are those of http(s) sources (server/fetch.py).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin

import httpx
import orjson

from cachegql.index import NotFoundError, ReadError, SourceLimits
from cachegql.server.bounded import (
    FLAGS,
    deadline_for,
    out_of_time,
    read_body,
    refused_redirect,
    short,
    time_left,
)
from cachegql.server.cache_files import read_cached, read_text, read_verified, write_atomically
from cachegql.server.fetch import RETRIED_STATUSES
from cachegql.server.oci_auth import Challenge, Credential, CredentialError, find_credential

__all__ = ["MANIFEST_TYPES", "ImageRef", "OciReader"]

MANIFEST_TYPES = (
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
CHUNK = 1 << 16
Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class ImageRef:
    """`oci://host/name[:tag][@digest]`, parsed."""

    url: str
    base: str  # the registry's API root, e.g. https://ghcr.io
    host: str
    name: str
    tag: str | None
    digest: str | None

    @classmethod
    def parse(cls, url: str) -> ImageRef:
        scheme, _, rest = url.partition("://")
        if scheme not in ("oci", "oci+http") or "/" not in rest.strip("/"):
            raise ReadError(f"{url}: not an OCI reference (oci://HOST[:PORT]/NAME[:TAG])")
        host, path = rest.split("/", 1)
        path, _, digest = path.partition("@")
        name, tag = path, None
        if ":" in path.rsplit("/", 1)[-1]:
            name, tag = path.rsplit(":", 1)
        http = "http" if scheme == "oci+http" else "https"
        # Registries only know lower-case names; Spack lowers them too (GitHub owners).
        return cls(url, f"{http}://{host}", host, name.strip("/").lower(), tag, digest or None)

    def api(self, kind: str, reference: str) -> str:
        return f"{self.base}/v2/{self.name}/{kind}/{reference}"


class OciReader:
    """Reads `oci://` URLs; every failure is a ReadError naming the URL and what is wrong."""

    def __init__(
        self,
        cache: Path | None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.5,
        username_variable: str | None = None,
        password_variable: str | None = None,
        progress: Callable[[str], Progress] | None = None,
        limits: SourceLimits | None = None,
        on_redirect: Callable[[str], None] | None = None,
    ) -> None:
        self.cache = cache
        self.timeout = timeout
        self.limits = limits or SourceLimits()
        self.on_redirect = on_redirect
        self.retries = retries
        self.backoff = backoff
        self.progress = progress
        self.variables = (username_variable, password_variable)
        self.client = httpx.Client(
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
            # Blobs are often served from storage elsewhere: redirects are followed, within
            # the source limits and the origin rules (`_redirected`, before each is).
            follow_redirects=True,
            max_redirects=self.limits.max_redirects,
            event_hooks={"response": [self._redirected]},
            headers={"user-agent": "cachegql", "accept-encoding": "gzip"},
        )
        self.authorization: dict[tuple[str, str], str] = {}  # (host, name) -> header
        self.credentials: dict[str, Credential | None] = {}
        self.downloaded = 0

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> OciReader:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def read(self, url: str, deadline: float | None = None) -> bytes:
        ref = ImageRef.parse(url)
        deadline = deadline_for(deadline, self.limits)
        if ref.digest is not None:
            return self._blob(ref, deadline)
        if ref.tag is None:  # a mirror root: its layout is read by the index (index/ingest/oci.py)
            raise NotFoundError(f"{url}: an OCI repository, not an image (no :TAG or @DIGEST)")
        return self._manifest(ref, deadline)

    def read_verified(self, url: str, sha256: str, deadline: float | None = None) -> bytes:
        fetch = lambda: self.read(url, deadline)  # noqa: E731 (named for the line's length)
        return read_verified(self.cache, url, sha256, fetch, self.limits, what="digest")

    def _manifest(self, ref: ImageRef, deadline: float) -> bytes:
        entry = self._entry(ref.url)
        etag = read_text(entry.with_suffix(".etag")) if entry else None
        headers = {"accept": ", ".join(MANIFEST_TYPES)}
        if etag:
            headers["if-none-match"] = etag
        response, body = self._get(
            ref, ref.api("manifests", str(ref.tag)), headers, "manifest", deadline
        )
        if response.status_code == 304 and entry is not None:
            return read_cached(entry.with_suffix(".body"), ref.url, self.limits)
        digest = response.headers.get("docker-content-digest")
        actual = "sha256:" + hashlib.sha256(body).hexdigest()
        if digest and digest.startswith("sha256:") and digest != actual:
            raise ReadError(f"{ref.url}: digest mismatch: the registry says {digest}, got {actual}")
        if self.cache is not None:
            stored = self.cache / "oci" / hashlib.sha256(ref.url.encode()).hexdigest()
            write_atomically(stored.with_suffix(".body"), body)
            etag = response.headers.get("etag") or f'"{actual}"'
            write_atomically(stored.with_suffix(".etag"), etag.encode())
        return body

    def _blob(self, ref: ImageRef, deadline: float) -> bytes:
        assert ref.digest is not None
        _, body = self._get(ref, ref.api("blobs", ref.digest), {}, "blob", deadline)
        return body

    def _get(
        self, ref: ImageRef, api: str, headers: dict[str, str], what: str, deadline: float
    ) -> tuple[httpx.Response, bytes]:
        """A 200 or 304 and its body; retries transient failures, answers challenges once;
        all of it by `deadline`, the body within the source limits."""
        challenged = False
        attempt = 0
        while True:
            last = attempt >= self.retries
            sent = dict(headers)
            if (authorization := self.authorization.get((ref.host, ref.name))) is not None:
                sent["authorization"] = authorization
            left = time_left(ref.url, deadline, self.limits)
            timeout = httpx.Timeout(min(self.timeout, left), connect=min(self.timeout, 10.0, left))
            try:
                with self.client.stream("GET", api, headers=sent, timeout=timeout) as response:
                    status = response.status_code
                    if status == 401 and not challenged:
                        challenged = True
                        self._answer(ref, response.headers.get("www-authenticate", ""))
                        continue
                    if status in RETRIED_STATUSES and not last:
                        attempt += 1
                        self._pause(attempt)
                        continue
                    if status not in (200, 304):
                        error = read_body(ref.url, response, self.limits, deadline)
                        raise self._error(ref, response, what, error)
                    body = self._body(ref, response, deadline) if status == 200 else b""
                    return response, body
            except httpx.TooManyRedirects:
                raise ReadError(
                    f"{ref.url}: more than {self.limits.max_redirects} redirects "
                    f"({FLAGS['max_redirects']}); not followed"
                ) from None
            except httpx.TimeoutException as exc:
                time_left(ref.url, deadline, self.limits)
                if last:
                    raise ReadError(
                        f"{ref.url}: timed out ({type(exc).__name__}) after {attempt + 1} attempts"
                    ) from None
            except httpx.TransportError as exc:
                if last:
                    raise ReadError(f"{ref.url}: cannot connect to {ref.base} ({exc})") from None
            attempt += 1
            if time.monotonic() + self.backoff * 2 ** (attempt - 1) >= deadline:
                raise out_of_time(ref.url, self.limits)
            self._pause(attempt)

    def _redirected(self, response: httpx.Response) -> None:
        """Before a redirect is followed: refused off http(s) or from https to http."""
        if not response.has_redirect_location:
            return
        origin = str(response.url)
        target = urljoin(origin, response.headers["location"])
        refused = refused_redirect(origin, target)
        if refused is not None:
            raise ReadError(f"{origin}: redirected to {short(target)}: {refused}")
        if self.on_redirect is not None:
            self.on_redirect(f"{origin} -> {target} ({response.status_code})")

    def send(
        self, ref: ImageRef, method: str, url: str, *, headers: dict[str, str], content: bytes
    ) -> httpx.Response:
        """One request that writes (a push), answering the registry's challenge once."""
        for challenged in (False, True):
            sent = dict(headers)
            if (authorization := self.authorization.get((ref.host, ref.name))) is not None:
                sent["authorization"] = authorization
            try:
                response = self.client.request(method, url, headers=sent, content=content)
            except httpx.HTTPError as exc:
                raise ReadError(f"{ref.url}: cannot connect to {ref.base} ({exc})") from None
            if response.status_code != 401 or challenged:
                break
            self._answer(ref, response.headers.get("www-authenticate", ""))
        if response.status_code >= 400:
            raise self._error(ref, response, "push")
        return response

    def _answer(self, ref: ImageRef, header: str) -> None:
        """Authorization for `ref`'s repository, as the registry's challenge asks."""
        challenge = Challenge.parse(header)
        credential = self._credential(ref)
        if challenge.scheme == "basic":
            if credential is None:
                raise ReadError(
                    f"{ref.url}: HTTP 401 Unauthorized: {ref.host} asks for a username and "
                    "password and none was found (--oci-username-variable/"
                    "--oci-password-variable, or `docker login`)"
                )
            self.authorization[(ref.host, ref.name)] = credential.basic()
        elif challenge.scheme == "bearer" and "realm" in challenge.parameters:
            self.authorization[(ref.host, ref.name)] = "Bearer " + self._token(
                ref, challenge, credential
            )
        else:
            raise ReadError(
                f"{ref.url}: HTTP 401 Unauthorized with a challenge cachegql cannot answer "
                f"({header or 'no WWW-Authenticate header'})"
            )

    def _token(self, ref: ImageRef, challenge: Challenge, credential: Credential | None) -> str:
        """A bearer token from the challenge's realm: anonymous, or for the credential."""
        parameters = {
            "service": challenge.parameters.get("service", ""),
            "scope": challenge.parameters.get("scope", f"repository:{ref.name}:pull"),
        }
        headers = {"authorization": credential.basic()} if credential is not None else {}
        realm = challenge.parameters["realm"]
        who = credential.describe() if credential is not None else "anonymously"
        try:
            response = self.client.get(realm, params=parameters, headers=headers)
        except httpx.HTTPError as exc:
            raise ReadError(f"{ref.url}: cannot get a token from {realm} ({exc})") from None
        if response.status_code != 200:
            raise ReadError(
                f"{ref.url}: the token service {realm} refused {who}: "
                f"HTTP {response.status_code} {response.reason_phrase}"
            )
        try:
            document = orjson.loads(response.content)
            token = document.get("token") or document.get("access_token")
        except (orjson.JSONDecodeError, AttributeError):
            token = None
        if not isinstance(token, str) or not token:
            raise ReadError(f"{ref.url}: the token service {realm} answered without a token")
        return token

    def _credential(self, ref: ImageRef) -> Credential | None:
        if ref.host not in self.credentials:
            try:
                self.credentials[ref.host] = find_credential(ref.host, *self.variables)
            except CredentialError as exc:
                raise ReadError(f"{ref.url}: {exc}") from None
        return self.credentials[ref.host]

    def _error(
        self, ref: ImageRef, response: httpx.Response, what: str, body: bytes | None = None
    ) -> ReadError:
        status = f"HTTP {response.status_code} {response.reason_phrase}"
        codes = _error_codes(response.content if body is None else body)
        if response.status_code in (401, 403):
            credential = self.credentials.get(ref.host)
            who = credential.describe() if credential is not None else "an anonymous pull"
            return ReadError(f"{ref.url}: {status}: {ref.host} refused {who} of {ref.name}")
        if response.status_code == 404:
            if "NAME_UNKNOWN" in codes:
                return NotFoundError(f"{ref.url}: {status}: no repository {ref.name} on {ref.host}")
            if "MANIFEST_UNKNOWN" in codes or what == "manifest":
                return NotFoundError(f"{ref.url}: {status}: manifest unknown (no tag {ref.tag})")
            return NotFoundError(f"{ref.url}: {status}: blob unknown")
        detail = f" ({', '.join(codes)})" if codes else ""
        return ReadError(f"{ref.url}: {status}{detail}")

    def _body(self, ref: ImageRef, response: httpx.Response, deadline: float) -> bytes:
        show = self.progress(ref.url.rsplit("/", 1)[-1]) if self.progress else None
        body = read_body(ref.url, response, self.limits, deadline, show)
        self.downloaded += len(body)
        return body

    def _pause(self, attempt: int) -> None:
        time.sleep(self.backoff * (2 ** (attempt - 1)))

    def _entry(self, url: str) -> Path | None:
        if self.cache is None:
            return None
        entry = self.cache / "oci" / hashlib.sha256(url.encode()).hexdigest()
        return entry if entry.with_suffix(".body").is_file() else None


def _error_codes(body: bytes) -> list[str]:
    """The codes of a registry's error document (`{"errors": [{"code": ...}]}`)."""
    try:
        errors = orjson.loads(body).get("errors", [])
        return [str(e["code"]) for e in errors if isinstance(e, dict) and "code" in e]
    except (orjson.JSONDecodeError, AttributeError, TypeError):
        return []
