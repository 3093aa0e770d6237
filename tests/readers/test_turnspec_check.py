"""The turn-spec check that keeps pydantic off a cold run (`kcost.readers.specs.turnspec.checked`) against the models
that define the format (`kcost.readers.specs.models`): on any input, near-valid or not, it accepts only what the models
accept, with the same values, and leaves the rest to them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from kcost.model.bounds import MAX_TOKENS, MAX_TURNS
from kcost.readers.specs.models import SessionSpec
from kcost.readers.specs.turnspec import checked

ROOT = Path(__file__).resolve().parents[2]

# Values a field may hold in a spec someone wrote: the plain ones and those a model coerces or refuses.
ODD = st.sampled_from([None, True, False, -1, 0, 1, 1.0, 2.5, "1", "", "30m", "90s", "inf", "-5", float("inf"),
                       float("nan"), MAX_TOKENS, MAX_TOKENS + 1, MAX_TURNS, MAX_TURNS + 1, 10**400, [], {}, "full",
                       "content", "none", "FULL"])  # fmt: skip
TOKENS = st.one_of(st.integers(0, 5000), ODD)
TURN_FIELDS = {
    "new": TOKENS, "output": TOKENS, "reasoning": TOKENS, "keep": TOKENS, "edit_at": TOKENS,
    "previous_output": st.one_of(st.sampled_from(["full", "content", "none"]), ODD),
    "strip_reasoning": st.one_of(st.booleans(), ODD), "idle": st.one_of(st.integers(0, 900), ODD),
    "repeat": st.one_of(st.integers(1, 5), ODD), "label": st.one_of(st.text(max_size=3), ODD), "typo": ODD,
}  # fmt: skip


@st.composite
def turn(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 20)) == 0:
        return draw(ODD)
    keys = draw(st.lists(st.sampled_from(sorted(TURN_FIELDS)), max_size=5, unique=True))
    return {k: draw(TURN_FIELDS[k]) for k in keys if k != "typo" or draw(st.integers(0, 4)) == 0}


@st.composite
def spec(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {"turns": draw(st.one_of(st.lists(turn(), max_size=4), ODD))}
    for key, values in (("version", st.one_of(st.just(1), ODD)), ("name", st.one_of(st.text(max_size=3), ODD)),
                        ("model", st.one_of(st.just("kimi-k3"), ODD)), ("typo", ODD),
                        ("prefix", st.one_of(st.fixed_dictionaries({"tokens": TOKENS},
                                                                   optional={"warm": st.one_of(st.booleans(), ODD),
                                                                             "typo": ODD}), ODD))):  # fmt: skip
        if draw(st.booleans()):
            out[key] = draw(values)
    return out


def _fields(spec: Any) -> Any:
    prefix = spec.prefix and (spec.prefix.tokens, spec.prefix.warm)
    turns = [(t.new, t.output, t.reasoning, str(getattr(t.previous_output, "value", t.previous_output)), t.keep,
              t.edit_at, t.strip_reasoning, t.idle, t.repeat, t.label) for t in spec.turns]  # fmt: skip
    return spec.name, spec.model, prefix, turns


@settings(max_examples=600, deadline=None)
@given(data=spec())
def test_the_check_accepts_only_what_the_models_accept_with_their_values(data: dict[str, Any]) -> None:
    fast = checked(data)
    try:
        model = SessionSpec.model_validate(data)
    except ValidationError:
        assert fast is None
        return
    if fast is not None:
        assert _fields(fast) == _fields(model)
        assert all(type(a) is type(b) for a, b in zip(_fields(fast)[3][0], _fields(model)[3][0], strict=True)
                   if not isinstance(b, str))  # fmt: skip


def test_the_common_spec_is_checked_without_the_models() -> None:
    data = {"name": "n", "prefix": {"tokens": 1000, "warm": True},
            "turns": [{"new": 10, "output": 5, "reasoning": 2, "idle": "30m", "label": "a"},
                      {"keep": 900, "edit_at": 100, "previous_output": "content", "strip_reasoning": True,
                       "idle": 1.5, "repeat": 3}]}  # fmt: skip
    fast = checked(data)
    assert fast is not None
    assert _fields(fast) == _fields(SessionSpec.model_validate(data))


def test_a_bill_and_a_quote_of_turn_specs_import_no_pydantic() -> None:
    probe = (
        "import sys, io, contextlib\n"
        "from kcost.cli import cli\n"
        "for args in (['bill', 'sample_sessions/coding-400k.yaml', '--format', 'json'],\n"
        "             ['quote', '--prefix', '400000', '--new', '4000', '--format', 'json']):\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        try:\n"
        "            cli.main(args, prog_name='kcost')\n"
        "        except SystemExit:\n"
        "            pass\n"
        "print('HEAVY', sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'rich')\n"
        "                      or m == 'kcost.readers.specs.models'))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert "HEAVY []" in out
