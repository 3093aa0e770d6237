"""The Kimi tokenizer loading code, on a small ranks file the test builds, and the estimate it falls back to."""

from __future__ import annotations

import base64
import json
import math
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from kcost.cli import cli
from kcost.errors import InputError
from kcost.prompts.tokenizer import (
    ASCII_PER_TOKEN,
    CJK_PER_TOKEN,
    Estimate,
    KimiTokenizer,
    cjk_characters,
    parse_ranks,
)
from tests.conftest import ROOT

tiktoken = pytest.importorskip("tiktoken")

# The characters the estimate counts as CJK, as its docs name them: one definition for the tests that check it.
CJK_RANGES = re.compile(r"[\u3000-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0010ffff]")

MERGES = [b"he", b"ll", b"llo", b"hello", b" w", b"or", b"orld", b" world", b"\xe4\xbd", b"\xe4\xbd\xa0"]


def ranks_file(tmp_path: Path) -> Path:
    """Every byte, then a few merges: a byte-level BPE in tiktoken.model's `<base64> <rank>` lines."""
    tokens = [bytes([b]) for b in range(256)] + MERGES
    path = tmp_path / "tiktoken.model"
    path.write_text("".join(f"{base64.b64encode(t).decode()} {rank}\n" for rank, t in enumerate(tokens)))
    return path


def test_counts_match_tiktoken_on_the_same_ranks(tmp_path: Path) -> None:
    path = ranks_file(tmp_path)
    ours = KimiTokenizer(path)
    assert ours.encode("hello world") == [256 + MERGES.index(b"hello"), 256 + MERGES.index(b" world")]
    assert ours.count("hello world") == 2
    assert ours.count("你") == 1  # three bytes, two merges
    assert ours.count("I'm HTTPServer") == len(ours.encode("I'm HTTPServer"))
    assert ours.sha256 in ours.source or ours.sha256[:12] in ours.source


def test_long_runs_are_split_as_the_reference_encoder_splits_them(tmp_path: Path) -> None:
    tok = KimiTokenizer(ranks_file(tmp_path))
    text = "a" * 60_000  # over the reference encoder's 25,000-character run limit
    assert tok.count(text) == sum(tok.count(piece) for piece in ("a" * 25_000, "a" * 25_000, "a" * 10_000))


def test_a_bad_ranks_file_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.model"
    bad.write_text("aGVsbG8= 0\nnot-base64!! x\n")
    with pytest.raises(InputError) as err:
        parse_ranks(bad.read_bytes(), str(bad))
    assert str(err.value).startswith(f"{bad}:2:")


def test_bill_says_which_counts_it_used(tmp_path: Path) -> None:
    log = ROOT / "tests" / "fixtures" / "kimi-api" / "moonshot_chat_request.json"
    runner = CliRunner()
    estimated = json.loads(runner.invoke(cli, ["bill", str(log), "--format", "json"]).stdout)
    exact = json.loads(
        runner.invoke(cli, ["bill", str(log), "--format", "json", "--tokenizer", str(ranks_file(tmp_path))]).stdout
    )
    assert estimated["runs"][0]["sessions"][0]["token_counts"].startswith("estimated")
    assert exact["runs"][0]["sessions"][0]["token_counts"].startswith("Kimi tokenizer (tiktoken.model")
    # byte-level BPE with almost no merges: about one token a byte, far above the 4-characters-a-token estimate
    assert exact["runs"][0]["total"]["input_tokens"] > 2 * estimated["runs"][0]["total"]["input_tokens"]


def test_estimate() -> None:
    e = Estimate()
    assert e.count("abcd" * 10) == 10
    assert e.count("你好世界机器学") == 5  # 7 CJK characters at 1.5 a token, rounded up
    assert e.count("") == 0


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF, blacklist_categories=())))
def test_estimate_is_its_rule_character_by_character(text: str) -> None:
    """The estimate, counted at C speed, is its rule spelled out a character at a time: 4 ASCII characters a
    token, 1.5 CJK characters (the ranges it names), any other character one, rounded up once."""
    ascii_chars = sum(1 for c in text if ord(c) < 0x80)
    cjk_chars = sum(1 for c in text if CJK_RANGES.fullmatch(c))
    other = len(text) - ascii_chars - cjk_chars
    assert Estimate().count(text) == math.ceil(ascii_chars / ASCII_PER_TOKEN + cjk_chars / CJK_PER_TOKEN + other)


def test_cjk_characters_are_told_as_the_ranges_say() -> None:
    """Told by their UTF-8 bytes, the CJK characters are exactly those of the ranges the estimate names, for
    every code point (a lone surrogate among them: logs read by Python's json may hold one)."""
    ranges = CJK_RANGES
    edges = [0x3000, 0xA000, 0xAC00, 0xD7B0, 0xD800, 0xF900, 0xFB00, 0x10000, 0x20000, 0x110000]
    for edge in edges:  # each character around every edge of a range, alone
        for point in range(max(0x80, edge - 3), min(0x110000, edge + 3)):
            assert cjk_characters(chr(point)) == (ranges.fullmatch(chr(point)) is not None), hex(point)
    for lo in range(0x80, 0x110000, 0x1000):  # every code point, a block of them at a time
        block = "".join(map(chr, range(lo, min(lo + 0x1000, 0x110000))))
        assert cjk_characters(block) == len(ranges.findall(block)), hex(lo)
    assert cjk_characters("é 你好 한국어 テスト 😀 𠀀") == 2 + 3 + 3 + 1


REAL = os.environ.get("KCOST_KIMI_TOKENIZER")


@pytest.mark.skipif(not REAL, reason="set KCOST_KIMI_TOKENIZER to a Kimi tiktoken.model to check the real vectors")
def test_real_kimi_vectors() -> None:
    tok = KimiTokenizer(REAL or "")
    assert tok.encode("Hello world") == [19180, 2695]
    assert tok.encode("The quick brown fox.") == [1008, 5072, 16331, 69275, 13]
    assert tok.encode("你好,世界!机器学习") == [33845, 11, 2243, 0, 101773]
    assert tok.encode("def foo(x): return x+1") == [1166, 21633, 3940, 3118, 745, 1288, 10, 16]
    assert tok.encode("  spaces   and\ttabs\n") == [220, 14803, 256, 316, 5604, 5609, 198]


def test_a_tokenizer_is_kept_as_its_file(tmp_path: Path) -> None:
    """Pickled (in a status line's state), a tokenizer is its file's path and digest, not its ranks: loaded again
    it counts alike, and a file changed since is an error, so the state is read afresh."""
    import pickle

    path = ranks_file(tmp_path)
    tok = KimiTokenizer(path)
    kept = pickle.dumps(tok)
    assert len(kept) < 400 and str(path).encode() in kept
    again = pickle.loads(kept)
    assert again.count("hello world 你好") == tok.count("hello world 你好") and again.sha256 == tok.sha256
    path.write_text(path.read_text() + base64.b64encode(b"zz").decode() + f" {len(path.read_text().splitlines())}\n")
    with pytest.raises(InputError, match="changed"):
        pickle.loads(kept)


def test_a_tokenizer_file_is_loaded_once_while_it_stays_as_it_was(tmp_path: Path) -> None:
    from kcost.prompts.tokenizer import load_counter

    path = ranks_file(tmp_path)
    first = load_counter(str(path))
    assert load_counter(str(path)) is first and isinstance(load_counter(None), Estimate)
    path.write_text(path.read_text() + base64.b64encode(b"zz").decode() + f" {len(path.read_text().splitlines())}\n")
    again = load_counter(str(path))
    assert again is not first and again.sha256 != first.sha256  # type: ignore[attr-defined]


def test_a_part_is_its_pieces_counted_and_a_token_for_each_control_token() -> None:
    pieces = (1, 'message role="user"', 2, "中文 text " * 7, 3)
    assert Estimate().pieces(pieces) == 3 + math.ceil(19 / 4) + Estimate().count("中文 text " * 7)
