"""The compiled session simulator (kcost/cache/_session.c) against the Python `Simulator`, its oracle: the same
`Outcome` of every request, on the project's sessions and on made requests that cut, rejoin, revisit and expire
what is cached under every model."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcost.cache import CacheModel, Kind, Request, Simulator, Span, parse_cache_model
from kcost.cache.simulator import compiled
from kcost.readers.turnspec import build
from tests.cache.test_simulator import MODELS
from tests.conftest import build_or_reject, turn_specs

pytestmark = pytest.mark.skipif(compiled(CacheModel(Kind.K3)) is None, reason="the compiled simulator is not built")

NAMED = ["k3", "k3:every=1", "k3:every=4,ttl=60", "k3:output=on", "k3:hash=256,ttl=inf", "shared:1024", "ideal",
         "none", "anthropic", "openai", "deepseek", "k3:output=on,every=2,ttl=30"]  # fmt: skip
# blocks of a few tokens: the made requests' spans cross many of them, and checkpoints kept `every` blocks make runs
SMALL = ["k3:hash=4,every=1", "k3:hash=4,every=3,ttl=30", "k3:hash=16,every=2,output=on", "k3:hash=4,output=on",
         "shared:8", "k3:hash=4,every=2,output=on,ttl=30"]  # fmt: skip


def _outcomes(requests: list[Request], model: CacheModel) -> tuple[list[object], list[object]]:
    """Each request's outcome from both simulators (or the error each raised), in order."""
    python, fast = Simulator(model), compiled(model)
    assert fast is not None
    mine, theirs = [], []
    for request in requests:
        for sim, out in ((python, mine), (fast, theirs)):
            try:
                out.append(sim.run(request))
            except ValueError as exc:
                out.append(("ValueError", str(exc)))
    return mine, theirs


@st.composite
def made_requests(draw: st.DrawFn) -> list[Request]:
    """Requests as logs make them and worse, from a few runs of tokens sent again and again: a prompt cut anywhere
    (inside a span too, so that one span has cuts of many lengths) or back to an earlier branch and sent on the
    same way, spans that go on the one before, outputs, resent outputs, idle gaps that add up to a TTL exactly
    and past it, and now and then a request that keeps more than there was."""
    pool = [Span(seg, 0, draw(st.sampled_from([1, 3, 17, 64, 100, 511, 512, 513, 1500]))) for seg in range(5)]
    requests, length, now, bounds = [], 0, 0.0, [0]
    for _ in range(draw(st.integers(1, 16))):
        now += draw(st.sampled_from([0.0, 1.0, 10.0, 15.0, 20.0, 29.0, 30.0, 31.0, 300.0, 301.0, 600.0]))
        how = draw(st.integers(0, 5)) if length else 0
        keep = {0: length, 1: length, 2: 0, 3: draw(st.integers(0, length)), 4: draw(st.sampled_from(bounds)),
                5: length + 1 if draw(st.integers(0, 9)) == 0 else length}[how]  # fmt: skip
        spans = []
        for _ in range(draw(st.integers(0 if keep else 1, 4))):
            whole = draw(st.sampled_from(pool))
            if draw(st.integers(0, 3)) == 0:  # a piece of it, maybe going on from the piece before
                cut = draw(st.integers(0, whole.length - 1))
                spans += [Span(whole.seg, 0, cut), Span(whole.seg, cut, whole.length - cut)]
            else:
                spans.append(whole)
        spans = [s for s in spans if s.length]
        total = keep + sum(s.length for s in spans)
        output = tuple(Span(draw(st.integers(5, 7)), 0, draw(st.sampled_from([0, 5, 600])))
                       for _ in range(draw(st.integers(0, 2))))  # fmt: skip
        resent = None
        if total and draw(st.booleans()):
            a = draw(st.integers(0, total))
            resent = (a, draw(st.integers(a, total)))
        turn = draw(st.sampled_from([keep, total, draw(st.integers(0, total))]))
        tokens = draw(st.sampled_from([None, None, 0, 42]))
        requests.append(Request(now, keep, tuple(spans), turn, output, resent, draw(st.booleans()), tokens))
        if keep <= length:
            length = total
            ends = [keep + sum(s.length for s in spans[: i + 1]) for i in range(len(spans))]
            bounds = sorted({*(b for b in bounds if b <= keep), keep, *ends})  # where each span of it ends
    return requests


@settings(max_examples=1500, deadline=None)
@given(requests=made_requests(), model=MODELS | st.sampled_from(NAMED + SMALL + SMALL).map(parse_cache_model))
def test_the_compiled_simulator_makes_the_python_ones_outcomes(requests: list[Request], model: CacheModel) -> None:
    mine, theirs = _outcomes(requests, model)
    assert theirs == mine


@settings(max_examples=200, deadline=None)
@given(spec=turn_specs(), model=MODELS)
def test_the_same_on_turn_specs(spec: object, model: CacheModel) -> None:
    requests = list(build_or_reject(spec).requests)  # type: ignore[arg-type]
    mine, theirs = _outcomes(requests, model)
    assert theirs == mine


def test_the_same_on_the_projects_sessions(tmp_path: Path) -> None:
    """Every session the project's logs (generated Claude Code logs among them) and turn specs make, prompts
    rebuilt, under every named model: the same outcomes."""
    from kcost.errors import InputError
    from kcost.readers import read_all
    from tests.conftest import ROOT, generate_claude_logs, project_logs

    generate_claude_logs(tmp_path, 1.0, seed=11)
    compared = 0
    for path in [*project_logs(tmp_path), *sorted((ROOT / "sample_sessions").glob("*.yaml"))]:
        try:
            sessions = read_all([str(path)], prompts=True, workers=1).sessions
        except InputError:
            continue  # not a log (a trace, a price file) or a bad one, as its own tests say
        for session in sessions:
            requests = [*session.warmup, *(r.request for r in session.records if r.request is not None)]
            for text in NAMED if requests else ():
                mine, theirs = _outcomes(requests, parse_cache_model(text))
                assert theirs == mine, (str(path), text)
                compared += len(mine)
    assert compared > 5_000


def test_a_run_cut_inside_keeps_only_what_is_before_the_cut() -> None:
    """Checkpoints kept every block, the prompt cut between two of them: the part of the run past the cut leaves
    the path (found by a search for a mutation of `_leave_runs` the random cases met once in thousands)."""
    requests = [Request(0.0, 0, (Span(4, 0, 17),), 0, billed=False),
                Request(0.0, 4, (Span(0, 0, 1), Span(1, 0, 3)), 4, billed=False),
                Request(0.0, 8, (Span(0, 0, 1),), 8, billed=False)]  # fmt: skip
    mine, theirs = _outcomes(requests, parse_cache_model("k3:hash=4,every=1"))
    assert theirs == mine


def test_a_request_that_keeps_a_negative_length_is_refused_alike() -> None:
    first = Request(0.0, 0, (Span(0, 0, 2000),), 0)
    mine, theirs = _outcomes([first, Request(1.0, -1, (Span(1, 0, 10),), 0), first], parse_cache_model("k3"))
    assert theirs == mine and mine[1] == ("ValueError", "keep=-1 is negative")


def test_a_long_session_under_every_rule_at_scale() -> None:
    """The lesson's 400K prefix over 300 turns, with edits, idles and compactions: the same outcomes."""
    from kcost.turn_specs import Prefix, SessionSpec, Turn

    turns = [Turn(keep=400_000, new=4_000, repeat=100), Turn(edit_at=1_000, new=50), Turn(new=10, idle=400),
             Turn(new=3_000, output=900, reasoning=300, repeat=100), Turn(keep=20_000, new=10),
             Turn(new=700, output=90, repeat=97)]  # fmt: skip
    session = build(SessionSpec(prefix=Prefix(tokens=400_000), turns=turns), source="t", name="t")
    for text in NAMED:
        mine, theirs = _outcomes(list(session.requests), parse_cache_model(text))
        assert theirs == mine and len(mine) == 300


def test_bills_are_made_with_it() -> None:
    """`simulate` takes the compiled simulator where it is built (a session in one cache)."""
    from kcost.cache import simulate

    requests = [Request(0.0, 0, (Span(0, 0, 2000),), 0), Request(1.0, 2000, (Span(1, 0, 10),), 2000)]
    assert [o.hit for o in simulate(requests, CacheModel(Kind.K3))] == [0, 1536]
    assert type(compiled(CacheModel(Kind.K3))).__module__ == "kcost.cache._session"


def test_a_bill_is_byte_identical_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shipped samples billed under several models with the compiled simulator and with the Python one: the
    same JSON, byte for byte."""
    from click.testing import CliRunner

    from kcost.cache import simulator
    from kcost.cli import cli
    from tests.conftest import ROOT

    samples = sorted(str(p) for p in (ROOT / "sample_sessions").iterdir() if p.suffix in (".yaml", ".jsonl"))
    args = ["bill", *samples, "--cache", "k3", "--cache", "k3:every=2,output=on", "--cache", "ideal", "--format",
            "json"]  # fmt: skip
    fast = CliRunner().invoke(cli, args)
    monkeypatch.setattr(simulator, "_session", None)
    assert simulator.compiled(CacheModel(Kind.K3)) is None
    slow = CliRunner().invoke(cli, args)
    assert fast.exit_code == slow.exit_code == 0, fast.output
    assert fast.stdout == slow.stdout and len(fast.stdout) > 10_000
