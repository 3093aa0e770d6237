"""A log's records read a piece at a time (`Source.records`) are the records of the file read whole, whatever the
block: blank lines, lines longer than the block, a byte-order mark, a last line with no line end, line numbers."""

from __future__ import annotations

import random
from pathlib import Path

import orjson
import pytest

from kcost.readers import source
from kcost.readers.jsonl import records

BOM = b"\xef\xbb\xbf"


@pytest.mark.parametrize("block", [1, 2, 3, 4, 5, 7, 16, 64])
def test_pieces_read_what_the_whole_file_holds(block: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source, "BLOCK", block)
    rng = random.Random(block)
    for n in range(150):
        lines = [orjson.dumps({"i": i, "t": "x" * rng.randint(0, 30)}) for i in range(rng.randint(1, 8))]
        body = b"\n".join(line if rng.random() > 0.1 else b"" for line in lines) + b"\n" * rng.randint(0, 1)
        if not body.strip():
            continue
        data = (BOM if rng.random() < 0.5 else b"") + body
        path = tmp_path / f"log-{n}.jsonl"
        path.write_bytes(data)
        assert list(source.peek_source(str(path)).records()) == list(records(str(path), body)), data
