"""The flags several commands share, declared once."""

from __future__ import annotations

import argparse

__all__ = ["add_s3_endpoint"]


def add_s3_endpoint(command: argparse.ArgumentParser) -> None:
    """`--s3-endpoint-url`, of `index` (for its sources and `--publish`) and `serve`."""
    command.add_argument(
        "--s3-endpoint-url",
        metavar="URL",
        help="for s3:// sources and stores: an S3-compatible store's endpoint (MinIO, Ceph, "
        "R2); default: AWS, or AWS_ENDPOINT_URL_S3; credentials from boto3's chain (AWS_* "
        "variables, profile, role), else requests are unsigned",
    )
