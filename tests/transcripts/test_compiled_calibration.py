"""The compiled calibration pass (`kcost/transcripts/_calibrate.c`) against the Python `Pass` it walks again: the
same requests, changes, notes and findings (prefix sizes, the measured ratio, whether one pass is enough) over
every log of the project, logs of the benchmark's Claude Code generator, made Claude Code and Kimi API logs, and
made shapes that take every path of a pass (prefixes sized, shared, unsized and changed; replies sent back;
parts that recur; contradicting and empty prompts; ratios other than 1); where it declines a session (numbers
past what it holds, shapes the Python pass refuses), the Python pass walks it and says what it says."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcost.calls import Usage
from kcost.causes import Cause, Change
from kcost.transcripts import calibrate as calibration
from kcost.transcripts.calibrate import Pass, Shape, calibrate
from tests.conftest import without
from tests.transcripts.both_ways import every_log_both_ways, made_log_both_ways
from tests.transcripts.test_calibration import api_logs, claude_logs

pytestmark = pytest.mark.skipif(calibration._calibrate is None, reason="the compiled calibration pass is not built")


def found(pass_: Pass) -> tuple[Any, ...]:
    """What a pass found that calibration reads of it."""
    return (pass_.changes, pass_.calls, pass_.logged, pass_.estimated, pass_.events, list(pass_.prefix_sizes.items()),
            pass_.unsized, pass_.shared_tokens, pass_.shared_estimates, pass_.scaled_parts, pass_.prefix_apart,
            pass_.notes, pass_.ratio(), pass_.measured())  # fmt: skip


def walked_both_ways(shapes: list[Shape], estimates: list[int], ratio: Fraction, given: dict[str, int] | None
                     ) -> tuple[Any, Any]:  # fmt: skip
    """One pass walked compiled and in Python: each its requests and findings, or the error it raised; and
    whether the compiled pass took the session."""
    out = []
    for compiled in (True, False):
        try:
            if compiled:
                got = calibration._calibrate.walk(list(shapes), list(estimates), ratio.numerator, ratio.denominator,
                                                  dict(given) if given is not None else None,
                                                  calibration.prefix_changed)  # fmt: skip
                if got is None:
                    return None, None
                walked, requests = calibration._walk(shapes, list(estimates), ratio, given)
            else:
                walked = Pass(list(estimates), ratio, dict(given) if given is not None else None)
                requests = [walked.step(shape, emit=True) for shape in shapes]
            out.append((requests, found(walked)))
        except (IndexError, KeyError) as exc:
            out.append(type(exc).__name__)
    return out[0], out[1]


# ---- made shapes ------------------------------------------------------------------------------------------------

PREFIXES = [None, None, "system prompt and tools", "the sub-agent's system prompt", ""]


@st.composite
def shapes(draw: st.DrawFn) -> tuple[list[Shape], list[int]]:
    """A session's shapes, made to reach every path of a pass: parts from a small pool (some estimated at 0,
    some past the estimates), kept and new parts in every proportion, prefixes of several agents, logged sizes
    from far below to far above the parts, replies sent back, outputs."""
    pool = draw(st.integers(1, 14))
    estimates = draw(st.lists(st.sampled_from([0, 1, 2, 7]) | st.integers(0, 400), min_size=pool, max_size=pool))
    made, parts = [], 0
    for n in range(draw(st.integers(1, 10))):
        keep = draw(st.sampled_from([0, parts, max(parts - 1, 0)]) | st.integers(0, parts + 1))
        new = tuple(draw(st.lists(st.integers(0, pool + 1), max_size=5)))
        parts = min(keep, parts) + len(new)
        usage = None
        if draw(st.integers(0, 3)):
            prompt = draw(st.sampled_from([0, 1, 20, 200]) | st.integers(0, 2_000))
            usage = Usage(prompt=prompt, cached=0, output=draw(st.integers(0, 60)))
        reply = draw(st.none() | st.integers(0, parts + 1))
        change = draw(st.none() | st.just(Change(Cause.MESSAGE_EDITED, "message 2 (user) differs")))
        made.append(Shape(keep=keep, new=new, turn=draw(st.integers(0, parts)), reply=reply,
                          reply_tokens=draw(st.none() | st.integers(0, 80)) if reply is not None else None,
                          output=draw(st.none() | st.integers(0, pool + 2)), usage=usage, time=float(n),
                          prefix=draw(st.sampled_from(PREFIXES)), change=change,
                          line=draw(st.none() | st.integers(1, 99))))  # fmt: skip
    return made, estimates


RATIOS = st.sampled_from([Fraction(1), Fraction(1, 8), Fraction(8), Fraction(3, 7), Fraction(1234, 999)])
GIVEN = st.none() | st.dictionaries(st.sampled_from(PREFIXES[2:]), st.integers(0, 500), max_size=2)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(made=shapes(), ratio=RATIOS, given_=GIVEN)
def test_a_pass_over_made_shapes_is_the_python_pass(made: tuple[list[Shape], list[int]], ratio: Fraction,
                                                     given_: dict[str, int] | None) -> None:  # fmt: skip
    compiled, python = walked_both_ways(*made, ratio, given_)
    assert compiled == python


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(made=shapes())
def test_calibrating_made_shapes_is_the_same_either_way(made: tuple[list[Shape], list[int]]) -> None:
    """The whole calibration, both passes where the first is not enough, compiled or not (or the same error)."""
    out = []
    for compiled in (True, False):
        try:
            if compiled:
                out.append(calibrate(*made, "the estimate"))
            else:
                with without(calibration, "_calibrate"):
                    out.append(calibrate(*made, "the estimate"))
        except (IndexError, KeyError) as exc:
            out.append(type(exc).__name__)
    assert out[0] == out[1]


def test_numbers_past_what_the_compiled_pass_holds_are_walked_in_python() -> None:
    shape = Shape(keep=0, new=(0, 1), turn=1, reply=None, reply_tokens=None, output=1, time=0.0, prefix=None,
                  usage=Usage(prompt=2**70, cached=0, output=3), change=None, line=1)  # fmt: skip
    assert calibration._calibrate.walk([shape], [5, 5], 1, 1, None, calibration.prefix_changed) is None
    sized = calibrate([shape], [5, 5], "the estimate")
    with without(calibration, "_calibrate"):
        assert calibrate([shape], [5, 5], "the estimate") == sized
    assert sum(s.length for s in sized.requests[0].append) == 2**70


# ---- logs ----------------------------------------------------------------------------------------------------


def test_every_log_of_the_project_is_calibrated_as_the_python_pass_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    walked = declined = 0
    seen = calibration._calibrate.walk

    def counted(*args: Any) -> Any:
        nonlocal walked, declined
        got = seen(*args)
        walked += got is not None
        declined += got is None
        return got

    monkeypatch.setattr(calibration._calibrate, "walk", counted)
    every_log_both_ways(tmp_path, 3, calibration, "_calibrate")
    assert walked > 50 and not declined, (walked, declined)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(claude_logs().map(lambda lines: ("log.jsonl", lines)),
                 api_logs().map(lambda lines: ("api.jsonl", lines))))  # fmt: skip
def test_made_logs_are_calibrated_as_the_python_pass_does(log: tuple[str, list[dict[str, Any]]]) -> None:
    made_log_both_ways(log, calibration, "_calibrate")
