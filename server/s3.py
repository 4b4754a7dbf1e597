"""Reading S3 buckets for `cachegql index`: the index's `Reader` for `s3://` URLs.

`s3://BUCKET/KEY` is an object; a mirror is a prefix laid out as on disk (layouts v2 and
v3). Credentials come from boto3's usual chain (environment, shared profile, instance
role); without any, requests go unsigned, as for a public bucket. `--s3-endpoint-url`
points at an S3-compatible store (MinIO, Ceph, R2). An object is revalidated with its
ETag (`If-None-Match`, 304); a blob whose checksum is known is not asked for at all when
a copy with that checksum is cached. The error for a refused request says which
credentials were tried, by where they came from, never by their secret.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

import boto3
import botocore.exceptions
from botocore import UNSIGNED
from botocore.config import Config

from cachegql.index import NotFoundError, ReadError, SourceLimits
from cachegql.server.bounded import deadline_for, read_stream
from cachegql.server.cache_files import read_cached, read_text, read_verified, write_atomically

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = ["S3Reader", "s3_client", "split_s3_url"]

_NOT_FOUND = frozenset({"NoSuchKey", "404", "NotFound"})
_REFUSED = frozenset({"AccessDenied", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch"})


def s3_client(
    endpoint_url: str | None, *, timeout: float = 30.0, retries: int = 3
) -> tuple[S3Client, str]:
    """A client on boto3's credential chain (unsigned without a credential, as for a
    public bucket), and which credential it uses, for messages: where it came from, never
    its secret."""
    session = boto3.session.Session()
    credentials = session.get_credentials()
    who = (
        f"credentials from boto3's chain ({credentials.method})"
        if credentials is not None
        else "no credentials (unsigned requests)"
    )
    config = Config(
        connect_timeout=min(timeout, 10.0),
        read_timeout=timeout,
        retries={"max_attempts": retries + 1, "mode": "standard"},
        signature_version=UNSIGNED if credentials is None else None,
    )
    return session.client("s3", endpoint_url=endpoint_url, config=config), who


def split_s3_url(url: str) -> tuple[str, str]:
    """`s3://bucket/some/key` -> ("bucket", "some/key")."""
    bucket, _, key = url.removeprefix("s3://").partition("/")
    return bucket, key


class S3Reader:
    """Reads `s3://` URLs; every failure is a ReadError naming the URL and what is wrong."""

    def __init__(
        self,
        cache: Path | None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        endpoint_url: str | None = None,
        limits: SourceLimits | None = None,
    ) -> None:
        self.cache = cache
        self.limits = limits or SourceLimits()
        self.client, self.who = s3_client(endpoint_url, timeout=timeout, retries=retries)
        self.downloaded = 0

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> S3Reader:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def read(self, url: str, deadline: float | None = None) -> bytes:
        bucket, key = split_s3_url(url)
        if not bucket:
            raise ReadError(f"{url}: not an S3 URL (s3://BUCKET/KEY)")
        if not key or key.endswith("/"):  # a prefix: read as a mirror root, by its layout
            raise NotFoundError(f"{url}: a prefix, not an object")
        entry = self._entry(url)
        etag = read_text(entry.with_suffix(".etag")) if entry else None
        deadline = deadline_for(deadline, self.limits)
        try:
            if etag:
                response = self.client.get_object(Bucket=bucket, Key=key, IfNoneMatch=etag)
            else:
                response = self.client.get_object(Bucket=bucket, Key=key)
            body = read_stream(
                url, response["Body"], response.get("ContentLength"), self.limits, deadline
            )
        except botocore.exceptions.ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if (code == "304" or status == 304) and entry is not None:
                return read_cached(entry.with_suffix(".body"), url, self.limits)
            if code == "NoSuchBucket":  # not a missing file: nothing else there is worth trying
                raise ReadError(f"{url}: no such bucket {bucket!r} ({code})") from None
            if code in _NOT_FOUND or status == 404:
                raise NotFoundError(f"{url}: no such key ({code})") from None
            if code in _REFUSED or status == 403:
                raise ReadError(f"{url}: access denied ({code}) with {self.who}") from None
            raise ReadError(f"{url}: S3 error {code} (HTTP {status})") from None
        except botocore.exceptions.NoCredentialsError:  # pragma: no cover - chain decided above
            raise ReadError(f"{url}: no credentials") from None
        except botocore.exceptions.BotoCoreError as exc:
            raise ReadError(f"{url}: cannot read ({exc})") from None
        self.downloaded += len(body)
        if self.cache is not None and response.get("ETag"):
            stored = self.cache / "s3" / hashlib.sha256(url.encode()).hexdigest()
            write_atomically(stored.with_suffix(".body"), body)
            write_atomically(stored.with_suffix(".etag"), response["ETag"].encode())
        return body

    def read_verified(self, url: str, sha256: str, deadline: float | None = None) -> bytes:
        fetch = lambda: self.read(url, deadline)  # noqa: E731 (named for the line's length)
        return read_verified(self.cache, url, sha256, fetch, self.limits)

    def _entry(self, url: str) -> Path | None:
        if self.cache is None:
            return None
        entry = self.cache / "s3" / hashlib.sha256(url.encode()).hexdigest()
        return entry if entry.with_suffix(".body").is_file() else None
