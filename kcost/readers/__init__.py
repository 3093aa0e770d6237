"""Readers: one module per input format, each turning a source into a `Session` of requests."""

from __future__ import annotations

from kcost.models import Session
from kcost.readers.source import FORMATS, Source, open_source
from kcost.readers.turnspec import read_turnspec

__all__ = ["FORMATS", "Source", "open_source", "read", "read_turnspec"]


def read(path: str, fmt: str = "auto") -> Session:
    """The session in `path` (`-` for stdin)."""
    return read_turnspec(open_source(path), fmt)
