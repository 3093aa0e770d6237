"""Counting tokens: the real Kimi tokenizer when the user points kcost at its `tiktoken.model`, else an estimate.

The ranks file ships with the model weights (one `<base64 bytes> <rank>` line per token) and is never
downloaded: `--tokenizer PATH` or `KCOST_TOKENIZER`. Exact counts need the optional extra
`pip install 'kcost[tokenizer]'` (tiktoken). Without a file, kcost estimates about 4 ASCII characters and
1.5 CJK characters per token (Moonshot's docs; Kimi's own CLIs estimate the same way), and says so.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

from kcost.errors import InputError
from kcost.inputs.files import read_bytes
from kcost.inputs.files import stamp as stamp_of

# Kimi's splitting pattern (tokenization_kimi.py, identical from K2 to K3); `&&` needs tiktoken's regex engine.
PAT_STR = "|".join(
    [
        r"""[\p{Han}]+""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
SPECIAL_TOKENS = 256  # reserved ids after the ranks (163,584 .. 163,839 in Kimi's file)
# The reference encoder's limits (TikTokenTokenizer.encode): windows of 400,000 characters, runs of at most
# 25,000 whitespace or non-whitespace characters.
MAX_WINDOW = 400_000
MAX_RUN = 25_000
ASCII_PER_TOKEN = 4.0
CJK_PER_TOKEN = 1.5


class TokenCounter(Protocol):
    @property
    def source(self) -> str: ...

    def count(self, text: str) -> int: ...


class Estimate:
    """About 4 ASCII characters or 1.5 CJK characters a token; any other character a token. Counted by the regex
    engine, never a Python loop over characters: the ASCII runs are cut out, and only what is left is looked at.
    A rendered part's pieces are counted at once (`pieces`)."""

    source = "estimated (~4 ASCII or 1.5 CJK characters per token)"

    def pieces(self, pieces: tuple[str | int, ...]) -> int:
        """The tokens of a rendered part: each text piece counted, each control token one."""
        return pieces_count(self.count, pieces)

    def count(self, text: str) -> int:
        if text.isascii():
            return math.ceil(len(text) / ASCII_PER_TOKEN)
        rest = _ASCII_RUNS.sub("", text)
        cjk = cjk_characters(rest)
        ascii_chars = len(text) - len(rest)
        return math.ceil(ascii_chars / ASCII_PER_TOKEN + cjk / CJK_PER_TOKEN + (len(rest) - cjk))


def pieces_count(count: Callable[[str], int], pieces: tuple[str | int, ...]) -> int:
    """The tokens of a rendered part by a counter's `count`: each text piece counted, each control token one."""
    texts = [p for p in pieces if p.__class__ is str]  # the rest are control tokens, one each
    return sum(map(count, texts)) + len(pieces) - len(texts)


_ASCII_RUNS = re.compile(r"[\x00-\x7f]+")


# CJK symbols and punctuation, kana and Han (U+3000..U+9FFF), Hangul syllables (U+AC00..U+D7AF), compatibility
# ideographs (U+F900..U+FAFF), and everything from U+20000 on, told by their UTF-8: the leading bytes E3..E9, EB, EC
# and F1..F4 each start one such character and no other; EA, ED, EF and F0 start one where the byte after says so.
# (A character class of those ranges takes the regex compiler 6 ms to build: a status line's whole budget of it.)
_CJK_LEADS = bytes([*range(0xE3, 0xEA), 0xEB, 0xEC, *range(0xF1, 0xF5)])
_NOT_CJK_LEADS = bytes(b for b in range(256) if b not in _CJK_LEADS)
_CJK_SPLIT_LEADS = re.compile(rb"\xea[\xb0-\xbf]|\xed(?:[\x80-\x9d]|\x9e[\x80-\xaf])|\xef[\xa4-\xab]|\xf0[\xa0-\xbf]")


def cjk_characters(text: str) -> int:
    """How many of `text`'s characters are CJK (as `Estimate` counts them; lone surrogates are not)."""
    data = text.encode("utf-8", "surrogatepass")
    return len(data.translate(None, _NOT_CJK_LEADS)) + len(_CJK_SPLIT_LEADS.findall(data))


class KimiTokenizer:
    """Exact counts from a Kimi `tiktoken.model` ranks file."""

    def __init__(self, path: str | Path) -> None:
        import hashlib  # here, as `base64` below: an estimate, most runs' counter, needs neither

        self.path = str(path)
        try:
            # deferred: the [tokenizer] extra, only with a tokenizer file
            import tiktoken
        except ImportError:
            raise InputError(
                "exact token counts need tiktoken", field="tokenizer", hint="pip install 'kcost[tokenizer]'"
            ) from None
        raw = _read(self.path)
        ranks = parse_ranks(raw, self.path)
        n = len(ranks)
        self.sha256 = hashlib.sha256(raw).hexdigest()
        special = {f"<|reserved_token_{i}|>": i for i in range(n, n + SPECIAL_TOKENS)}
        self._enc = tiktoken.Encoding(name="kimi", pat_str=PAT_STR, mergeable_ranks=ranks, special_tokens=special)

    @property
    def source(self) -> str:
        return f"Kimi tokenizer ({Path(self.path).name}, sha256 {self.sha256[:12]})"

    def count(self, text: str) -> int:
        return sum(len(self._enc.encode_ordinary(piece)) for piece in _pieces(text))

    def encode(self, text: str) -> list[int]:
        return [t for piece in _pieces(text) for t in self._enc.encode_ordinary(piece)]

    def __reduce__(self) -> tuple[object, ...]:
        """Pickled as its file (a live view's state, a worker's job): loaded again from it, not its ranks carried."""
        return (_reloaded, (self.path, self.sha256))


def _reloaded(path: str, sha256: str) -> KimiTokenizer:
    """The tokenizer at `path`, as it was pickled: an `InputError` where the file has changed since."""
    tokenizer = KimiTokenizer(path)
    if tokenizer.sha256 != sha256:
        raise InputError("the tokenizer file changed since its counts were kept", source=path, field="tokenizer")
    return tokenizer


def _read(path: str) -> bytes:
    return read_bytes(path, "tokenizer file")


def parse_ranks(raw: bytes, source: str) -> dict[bytes, int]:
    """`<base64 token> <rank>` per line, as tiktoken's load_tiktoken_bpe reads it (without its cache copy)."""
    # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
    import base64

    ranks: dict[bytes, int] = {}
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token, validate=True)] = int(rank)
        except ValueError:
            raise InputError("expected `<base64 token> <rank>`", source=source, line=number) from None
    if not ranks:
        raise InputError("tokenizer file is empty", source=source)
    return ranks


def _pieces(text: str) -> Iterator[str]:
    """The reference encoder's windows and runs, so counts match it on huge inputs."""
    for start in range(0, len(text), MAX_WINDOW):
        window = text[start : start + MAX_WINDOW]
        if len(window) <= MAX_RUN:
            yield window
            continue
        yield from _split_runs(window)


def _split_runs(s: str) -> Iterator[str]:
    run, is_space, begin = 0, s[0].isspace(), 0
    for i, ch in enumerate(s):
        now_space = ch.isspace()
        if is_space ^ now_space:
            run, is_space = 1, now_space
        else:
            run += 1
            if run > MAX_RUN:
                yield s[begin:i]
                begin, run = i, 1
    yield s[begin:]


def load_counter(path: str | None) -> TokenCounter:
    """The counter a run counts with: the Kimi tokenizer in the file at `path` (loaded once a process while the
    file stays as it was: a worker's jobs, a live view's looks), else the estimate."""
    if not path:
        return Estimate()

    try:
        stamp = stamp_of(path)
    except OSError:
        return KimiTokenizer(path)  # says what is wrong with it
    kept = _LOADED.get(path)
    if kept is None or kept[0] != stamp:
        kept = _LOADED[path] = (stamp, KimiTokenizer(path))
    return kept[1]


_LOADED: dict[str, tuple[tuple[int, ...], KimiTokenizer]] = {}  # by path: the file's size and time, its tokenizer
