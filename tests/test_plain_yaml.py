"""Plain YAML is read without the YAML parser (`kcost.inputs.plain_yaml`), exactly as the parser reads it, or left to
the parser: every answer is held to PyYAML's safe loader (the data, each value's type, the line of each value), on the
shipped samples, on documents generated in the styles turn specs are written in, on scalars the YAML 1.1
resolver reads as something other than text, and on broken documents."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcost.errors import InputError
from kcost.inputs.documents import load_yaml, load_yaml_by_parser
from kcost.inputs.plain_yaml import plain
from tests.conftest import heavy_imports

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"


def typed(value: Any) -> Any:
    """`value` with the type of every scalar beside it (so `True` is not `1`)."""
    if isinstance(value, dict):
        return ("map", [(typed(k), typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("seq", [typed(v) for v in value])
    return (type(value).__name__, value)


def by_parser(text: str) -> tuple[Any, dict[tuple[object, ...], int]] | None:
    try:
        data, lines = load_yaml_by_parser(text, "spec.yaml")
    except InputError:
        return None
    return typed(data), dict(lines)


def read_plain(text: str) -> bool:
    """Whether `text` was read without the parser; where it was, what it read is what the parser reads."""
    got = plain(text)
    if got is None:
        return False
    assert (typed(got[0]), got[1]) == by_parser(text), text
    return True


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.glob("*.yaml")))
def test_the_shipped_samples_are_read_without_the_parser(sample: str) -> None:
    text = (SAMPLES / sample).read_text(encoding="utf-8")
    assert read_plain(text)
    assert load_yaml(text, sample)[0] == load_yaml_by_parser(text, sample)[0]


def test_a_yaml_bill_loads_no_yaml_parser(tmp_path: Path) -> None:
    out = str(tmp_path / "bill.json")
    assert heavy_imports([["bill", str(SAMPLES / "growing-chat.yaml"), "--format", "json", "-o", out]], tmp_path) == []
    assert '"total"' in Path(out).read_text()


# Scalars the YAML 1.1 resolver reads as booleans, nulls, numbers or dates, or as text despite looking like them
TRICKY = ["yes", "No", "ON", "off", "True", "FALSE", "y", "n", "~", "null", "Null", "NULL", "nil", "0", "-0", "+5",
          "007", "08", "1_000", "1__0", "1_", "0x1F", "0b101", "0o17", "1e5", "1.5", ".5", "1.", "-.inf", ".NaN",
          "12:30", "1:20:30", "2026-01-01", "2026-01-01 10:00:00", "45m", "1h30m", "2h", "90s", "3d", "=", "<<",
          "k3:hash=512", "a:b", "x - y", "it's", "a#b", "a #b", "-x", "- x", "@x", "`x", "%x", "!x", "&x", "*x",
          "|", ">", "?x", "? x", ":x", "[1, 2]", "{a: 1}", "[]", "{}", "'q'", '"q"', "'it''s'", '"a\\tb"', "''", '""',
          "key: value", "ends:", "a,b", "kimi-k3", "lesson coding session (warm 400K prefix)"]  # fmt: skip


@pytest.mark.parametrize("scalar", TRICKY)
def test_scalars_that_look_like_something_else(scalar: str) -> None:
    for text in (f"label: {scalar}\n", f"- {scalar}\n", f"turns:\n  - {{new: 1, label: {scalar}}}\n",
                 f"label: [{scalar}, 2]\n", f"{scalar}: 1\n"):  # fmt: skip
        read_plain(text)  # where it is read plain, as the parser reads it


def test_what_is_read_plain() -> None:
    """The shapes specs take are read without the parser; what needs the parser is left to it."""
    plain_ones = ["a: 1_000\n", "a: yes\nb: Off\n", "a: ~\n", "a: 45m\n", "a: 'x y'\n", 'a: "k3:hash=512"\n',
                  "a:\n- 1\n- 2\n", "a:\n  b:\n    - {c: 1, d: two words}\n", "- [1, 2]\n- []\n- {}\n",
                  "  a: 1\n  b: 2\n", "a: 1 # note\n# more\n\nb: x#y\n"]  # fmt: skip
    for text in plain_ones:
        assert read_plain(text), text
    parsed = ["a: 1.5\n", "a: 2026-01-01\n", "a: &x 1\nb: *x\n", "a: |\n  text\n", "a:\n", "a: 1\na: 2\n",
              "a: 1\r\n", "a:\t1\n", "a: é\n", "---\na: 1\n", "a: {b: [1]}\n", "a: b\n  c\n", 'a: "x\\n"\n',
              "a: [1,]\n", "{a: 1}\n", "'a': 1\n", "a : 1\n", "", "# only a comment\n"]  # fmt: skip
    for text in parsed:
        assert plain(text) is None, text
    deep = "".join(f"{' ' * n}k:\n" for n in range(3000)) + " " * 3000 + "k: 1\n"
    assert plain(deep) is None
    assert plain(f"a: {'9' * 5000}\n") is None


_WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
_KEYS = _WORDS.filter(lambda w: w not in ("yes", "no", "on", "off", "true", "false", "null", "y", "n"))
_TEXT = st.lists(_WORDS, min_size=1, max_size=3).map(" ".join)
_SCALARS = st.one_of(st.integers(-10**12, 10**12), st.booleans(), st.none(), _TEXT,
                     st.sampled_from(["45m", "1h30m", "kimi-k3", "k3:hash=512", "(warm) 400K", "x/y.z"]))  # fmt: skip
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=4)),
    max_leaves=24,
)


def _scalar(value: Any, rng: random.Random, flow: bool = False) -> str:
    if value is None:
        return rng.choice(["~", "null", "Null"])
    if isinstance(value, bool):
        return rng.choice([["false", "False", "no", "off", "NO"], ["true", "True", "yes", "on", "YES"]][value])
    if isinstance(value, int):
        text = str(abs(value))
        if len(text) > 3 and rng.random() < 0.5:  # thousands as specs write them: 400_000
            text = f"{int(text):_}"
        return ("-" if value < 0 else rng.choice(["", "+"]) if value else "") + text
    if rng.random() < 0.3 or value in ("yes", "no", "on", "off", "true", "false", "null") or (flow and ":" in value):
        quote = rng.choice("'\"")
        return f"{quote}{value}{quote}"
    return str(value)


def _flat(value: Any) -> bool:
    return isinstance(value, (list, dict)) and not any(isinstance(v, (list, dict)) for v in (
        value.values() if isinstance(value, dict) else value))  # fmt: skip


def _note(rng: random.Random) -> str:
    return rng.choice(["", "", "", "  # a note", " # 'quoted' #x"])


def _flow(value: Any, rng: random.Random) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_scalar(v, rng, True)}" for k, v in value.items()) + "}"
    return "[" + ", ".join(_scalar(v, rng, True) for v in value) + "]"


def dump(value: Any, rng: random.Random, indent: int = 0, step: int = 2) -> list[str]:
    """`value` as YAML lines in a style chosen at random among those turn specs are written in."""
    pad = " " * indent
    if isinstance(value, dict):
        if not value:
            return [pad + "{}"]
        out = []
        for key, item in value.items():
            if rng.random() < 0.1:
                out.append(rng.choice(["", pad + "# a comment"]))
            if not isinstance(item, (list, dict)) or not item or (_flat(item) and rng.random() < 0.5):
                shown = _flow(item, rng) if isinstance(item, (list, dict)) else _scalar(item, rng)
                out.append(f"{pad}{key}: {shown}{_note(rng)}")
            else:
                out.append(f"{pad}{key}:{_note(rng)}")
                under = indent if isinstance(item, list) and rng.random() < 0.3 else indent + step
                out += dump(item, rng, under, step)
        return out
    if isinstance(value, list):
        if not value:
            return [pad + "[]"]
        out = []
        for item in value:
            if isinstance(item, dict) and item and not (_flat(item) and rng.random() < 0.5):
                inner = dump(item, rng, indent + 2, step)
                out.append(pad + "- " + inner[0].lstrip(" ")) if inner[0].strip() else out.append(pad + "-")
                out += inner[1:] if inner[0].strip() else inner
            elif isinstance(item, (list, dict)) and item and not _flat(item):
                out.append(pad + "-")
                out += dump(item, rng, indent + step, step)
            else:
                shown = _flow(item, rng) if isinstance(item, (list, dict)) else _scalar(item, rng)
                out.append(f"{pad}- {shown}{_note(rng)}")
        return out
    return [pad + _scalar(value, rng)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=st.one_of(st.dictionaries(_KEYS, _VALUES, min_size=1), st.lists(_VALUES, min_size=1)),
       seed=st.integers(0, 2**32), step=st.sampled_from([2, 4]))  # fmt: skip
def test_generated_specs_are_read_as_the_parser_reads_them(value: Any, seed: int, step: int) -> None:
    rng = random.Random(seed)
    text = "\n".join(["# a generated spec", *dump(value, rng, 0, step)]) + "\n"
    assert read_plain(text), text
    assert typed(plain(text)[0]) == typed(value)  # type: ignore[index]


_EDITS = " -:#{}[],'\"\n\t&*!|>%@`~_.0123456789abxyz"


def test_broken_documents_are_left_to_the_parser_or_read_as_it_reads_them() -> None:
    """Documents edited at random, a few characters each: each is read plain as the parser reads it, or not at
    all (and then the parser reads it, or says what is wrong)."""
    rng = random.Random(7)
    bases = [p.read_text(encoding="utf-8") for p in sorted(SAMPLES.glob("*.yaml"))]
    bases += ["turns:\n- keep: 400_000\n  new: 4_000\n  label: a b\n- [1, 2]\nprefix:\n  tokens: 1\n"]
    read = 0
    for _ in range(3000):
        text = list(rng.choice(bases))
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(text) + 1)
            edit = rng.random()
            if edit < 0.4:
                text.insert(at, rng.choice(_EDITS))
            elif edit < 0.7 and at < len(text):
                del text[at]
            elif at < len(text):
                text[at] = rng.choice(_EDITS)
        read += read_plain("".join(text))
    assert read > 300  # most single edits of a comment or a word still leave a plain document
