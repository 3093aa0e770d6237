"""A model switch is a cause (issue 21): each model's prefix cache is its own, and the misses a switch causes
are named, priced and given K3's guidance as their fix.

The simulator keeps one cache per model a session's calls name; the reference (`tests/cache/reference.py`)
runs each model's requests in its own token-by-token cache, so a generated session with switches is checked
against it. Hand-worked sessions hold the figures.

The session below is a Kimi API log of four calls, 60 s apart, each reply 100 tokens: kimi-k3 (a 2,000-token
prompt), kimi-k3 (2,600: the reply and a 500-token message appended), kimi-k3.1-pro (3,100) and back to kimi-k3
(3,600). Under `k3` (512-token blocks, outputs not cached) each call can hit its cache up to the checkpoint at
the last block end of the prompt before it in that cache: call 2 hits 1,536 (3 x 512 of 2,000). Call 3 is the
first on kimi-k3.1-pro: it hits nothing, where one cache would have hit 2,560 (of call 2's 2,600). Call 4 is
back on kimi-k3, whose cache last saw call 2: it hits 2,560, where one cache would have hit 3,072 (of call 3's
3,100). The switch costs 2,560 + 512 = 3,072 tokens, each at K3's $3.00 per million a miss: $0.009216.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from kcost import api
from kcost.billing.bills import bill
from kcost.cache.model import CacheModel, Kind, parse_cache_model
from kcost.cache.simulator import simulate
from kcost.cli import cli
from kcost.model.causes import FIXES, Cause
from kcost.model.requests import MissPart, Reason, Request, Span
from kcost.model.session import one_model
from kcost.pricing.prices import load_prices
from tests.cache.reference import reference_run
from tests.cache.test_simulator import MODELS
from tests.conftest import build_or_reject, turn_specs


@settings(max_examples=300, deadline=None)
@given(spec=turn_specs(), model=MODELS, data=st.data())
def test_each_model_has_its_own_cache_as_the_reference_says(spec, model: CacheModel, data) -> None:  # type: ignore[no-untyped-def]
    session = build_or_reject(spec)
    requests = session.requests
    keys = data.draw(st.lists(st.sampled_from("abc"), min_size=len(requests), max_size=len(requests)))
    fast = list(simulate(requests, model, keys))
    slow = list(reference_run(requests, model, keys))
    alone = list(simulate(requests, model))  # one cache for the whole session (itself checked against the reference)
    alone_slow = list(reference_run(requests, model))
    assert [o.hit for o in fast] == [hit for hit, _, _ in slow]
    for outcome, one, own, one_slow in zip(fast, alone, slow, alone_slow, strict=True):
        assert sum(m.tokens for m in outcome.misses) == outcome.miss
        switch = [m for m in outcome.misses if m.reason is Reason.MODEL_SWITCH]
        if one.hit > outcome.hit:  # what one cache would have hit is the switch's; the rest misses as it would there
            assert outcome.misses == (MissPart(Reason.MODEL_SWITCH, one.hit - outcome.hit, outcome.hit), *one.misses)
            _, shared, shared_any = one_slow
        else:
            assert not switch
            _, shared, shared_any = own
        expired = [m for m in outcome.misses if m.reason is Reason.EXPIRED]
        if model.kind is not Kind.NONE and shared_any > shared and shared < outcome.input:
            assert expired and expired[0].at == shared
            assert expired[0].tokens == min(shared_any, outcome.input) - shared
        else:
            assert not expired


@st.composite
def recombining(draw: st.DrawFn) -> tuple[list[Request], list[str]]:
    """Requests whose prompts are drawn from a few runs of tokens, so a prompt comes back to another's prefix (a
    sub-agent's conversation resumed, a prompt cut and regrown): each request keeps of the one before what the
    two share, or less, and each runs on one of three models."""
    runs = draw(st.lists(st.integers(1, 40), min_size=2, max_size=5))
    requests, keys, previous, time = [], [], [], 0.0
    for n in range(draw(st.integers(1, 8))):
        pieces = draw(st.lists(st.integers(0, len(runs) - 1), min_size=1, max_size=4))
        prompt = [(seg, i) for seg in pieces for i in range(draw(st.integers(1, runs[seg])))]
        shared = next((i for i, (a, b) in enumerate(zip(prompt, previous, strict=False)) if a != b),
                      min(len(prompt), len(previous)))  # fmt: skip
        keep = draw(st.integers(0, shared))
        append = tuple(Span(seg, i, 1) for seg, i in prompt[keep:])  # one token each: the simulator joins them
        time += draw(st.sampled_from([0.0, 5.0, 50.0]))
        output = (Span(100 + n, 0, draw(st.integers(0, 30))),)
        turn_start = draw(st.integers(0, len(prompt)))
        requests.append(Request(time, keep, append, turn_start, output))
        keys.append(draw(st.sampled_from("abc")))
        previous = prompt
    return requests, keys


@settings(max_examples=300, deadline=None)
@given(session=recombining(), model=MODELS)
def test_prompts_coming_back_to_another_models_prefix_agree_with_the_reference(session, model: CacheModel) -> None:  # type: ignore[no-untyped-def]
    requests, keys = session
    fast = list(simulate(requests, model, keys))
    assert [o.hit for o in fast] == [hit for hit, _, _ in reference_run(requests, model, keys)]
    alone = list(simulate(requests, model))
    assert [o.hit for o in alone] == [hit for hit, _, _ in reference_run(requests, model)]
    for outcome, one in zip(fast, alone, strict=True):
        assert sum(m.tokens for m in outcome.misses) == outcome.miss
        assert sum(m.tokens for m in outcome.misses if m.reason is Reason.MODEL_SWITCH) == max(0, one.hit - outcome.hit)


@settings(max_examples=100, deadline=None)
@given(spec=turn_specs(), model=MODELS, key=st.sampled_from([None, "kimi-k3"]))
def test_one_model_runs_as_one_cache(spec, model: CacheModel, key: str | None) -> None:  # type: ignore[no-untyped-def]
    requests = build_or_reject(spec).requests
    keys = [key if i % 2 else None for i in range(len(requests))]  # an unnamed call is on the one before
    assert list(simulate(requests, model, keys)) == list(simulate(requests, model))


K3 = parse_cache_model("k3")
PRICES = load_prices()
MODELS_LOGGED = ("kimi-k3", "kimi-k3", "kimi-k3.1-pro", "kimi-k3")
PROMPTS = (2000, 2600, 3100, 3600)
FIX = ("keep one model for the whole session: switching models mid-session may cause instability (K3's guidance), "
       "and each model's cache is its own")  # fmt: skip


def switching_log(tmp_path: Path, gaps: tuple[float, ...] = (60, 60, 60)) -> Path:
    """The Kimi API log of the module's session: request and response pairs, each call `gaps` after the last."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are Kimi."},
        {"role": "user", "content": "Plan the change."},
    ]
    lines, when = [], 1768994256.0
    for n, (model, prompt) in enumerate(zip(MODELS_LOGGED, PROMPTS, strict=True), start=1):
        reply = {"role": "assistant", "content": f"Step {n} done.", "reasoning_content": f"Thinking of step {n}."}
        usage = {"prompt_tokens": prompt, "completion_tokens": 100, "total_tokens": prompt + 100, "cached_tokens": 0}
        response = {"id": f"chatcmpl-switch-{n}", "object": "chat.completion", "created": int(when), "model": model,
                    "choices": [{"index": 0, "finish_reason": "stop", "message": reply}], "usage": usage}  # fmt: skip
        lines.append(json.dumps({"request": {"model": model, "messages": list(messages)}, "response": response}))
        messages += [reply, {"role": "user", "content": f"Now step {n + 1}."}]
        when += gaps[n - 1] if n <= len(gaps) else 0
    path = tmp_path / "switch.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def misses(turn: Any) -> list[tuple[str, int, int]]:
    return [(m.reason, m.at, m.tokens) for m in turn.misses]


def cost(hit: int, miss: int, output: int = 100) -> Decimal:
    """A call at K3's rates: $0.30 a million hit, $3.00 missed, $15.00 output."""
    return (hit * Decimal("0.30") + miss * Decimal(3) + output * Decimal(15)) / 1_000_000


def test_a_switch_misses_what_the_other_model_cached_and_back_finds_its_own(tmp_path: Path) -> None:
    (session,) = api.read(switching_log(tmp_path))
    assert session.call_models == MODELS_LOGGED
    turns = bill(session, cache=K3, prices=PRICES).turns
    assert [t.hit_tokens for t in turns] == [0, 1536, 0, 2560]
    assert misses(turns[2]) == [("model-switch", 0, 2560), ("block-granularity", 2560, 40),
                                ("output-not-cached", 2600, 100), ("new-input", 2700, 400)]  # fmt: skip
    assert misses(turns[3]) == [("model-switch", 2560, 512), ("block-granularity", 3072, 28),
                                ("output-not-cached", 3100, 100), ("new-input", 3200, 400)]  # fmt: skip
    assert [t.total for t in turns] == [cost(0, 2000), cost(1536, 1064), cost(0, 3100), cost(2560, 1040)]
    assert sum(t.total for t in turns) == Decimal("0.0288408")


def test_kept_on_one_model_the_session_hits_what_one_cache_holds(tmp_path: Path) -> None:
    (session,) = api.read(switching_log(tmp_path))
    kept = one_model(session)
    assert kept.cache_keys == ("kimi-k3",) * 4 and kept.records == session.records  # priced as logged
    one, switched = (bill(s, cache=K3, prices=PRICES) for s in (kept, session))
    assert [t.hit_tokens for t in one.turns] == [0, 1536, 2560, 3072]
    assert not any(m.reason == "model-switch" for t in one.turns for m in t.misses)
    assert one.summary.total == cost(0, 2000) + cost(1536, 1064) + cost(2560, 540) + cost(3072, 528)
    assert one.summary.total == Decimal("0.0205464")
    # what keeping one model saves: the switch's 3,072 tokens billed as hits ($0.30) instead of misses ($3.00)
    assert switched.summary.total - one.summary.total == 3072 * Decimal("2.70") / 1_000_000 == Decimal("0.0082944")
    assert switched.summary.miss_by_reason["model-switch"].cost == Decimal("0.009216")


def test_one_model_is_the_session_itself_where_nothing_switches(tmp_path: Path) -> None:
    (session,) = api.read(switching_log(tmp_path))
    assert one_model(session, "kimi-k3.1-pro").cache_keys == ("kimi-k3.1-pro",) * 4
    kept = one_model(session)
    assert one_model(kept) is kept and one_model(kept, "kimi-k3") is kept
    spec = api.read(Path(__file__).resolve().parent.parent / "sample_sessions" / "growing-chat.yaml")[0]
    assert one_model(spec) is spec  # no model logged, none given


def test_pricing_every_call_at_one_model_keeps_the_switch_in_the_cache(tmp_path: Path) -> None:
    """`--model X` prices the calls; the cache is what the API served, on the models the log names."""
    (session,) = api.read(switching_log(tmp_path))
    priced = bill(session, cache=K3, prices=PRICES, model="kimi-k3.1-pro")
    assert [t.hit_tokens for t in priced.turns] == [0, 1536, 0, 2560]
    assert priced.summary.miss_by_reason["model-switch"].tokens == 3072


def test_back_after_the_ttl_the_first_models_cache_is_gone(tmp_path: Path) -> None:
    """Calls 200 s apart: kimi-k3's cache, last used by call 2, is 400 s old at call 4 (past the 300 s TTL), where
    one cache, used by call 3 200 s before, would still have held it: the switch is the whole hit one cache had."""
    (session,) = api.read(switching_log(tmp_path, gaps=(60, 200, 200)))
    turns = bill(session, cache=K3, prices=PRICES).turns
    assert [t.hit_tokens for t in turns] == [0, 1536, 0, 0]
    assert misses(turns[3])[0] == ("model-switch", 0, 3072)
    kept = bill(one_model(session), cache=K3, prices=PRICES).turns
    assert [t.hit_tokens for t in kept] == [0, 1536, 2560, 3072]


def test_explain_names_the_switch_with_k3s_guidance(tmp_path: Path) -> None:
    assert FIXES[Cause.MODEL_SWITCH] == FIX
    path = str(switching_log(tmp_path))
    result = CliRunner().invoke(cli, ["explain", path, "--format", "json"])
    assert result.exit_code == 0, result.output + result.stderr
    (explained,) = json.loads(result.stdout)
    switched = [r for r in explained["ranked"] if r["cause"] == "model switched"]
    assert switched == [{"cause": "model switched", "turns": 2, "tokens": 3072, "cost": "0.009216", "fix": FIX}]
    by_turn = {t["turn"]: [c for c in t["causes"] if c["cause"] == "model switched"] for t in explained["turns"]}
    assert [c["tokens"] for c in by_turn[3]] == [2560] and [c["tokens"] for c in by_turn[4]] == [512]
    assert by_turn[3][0]["detail"] == "on kimi-k3.1-pro after kimi-k3, tokens 0 to 2,560"
    assert by_turn[4][0]["detail"].startswith("on kimi-k3 after kimi-k3.1-pro, tokens ")
    (fix,) = explained["fixes"]  # kept on one model, billed again: the bill above on one cache and K3's prices
    assert (fix["fix"], fix["causes"], fix["turns"]) == ("one-model", ["model switched"], [3])
    assert Decimal(fix["total"]) == Decimal("0.0205464") and Decimal(fix["saving"]) == Decimal("0.0082944")
    assert explained["avoidable"] == fix["saving"]
    text = CliRunner().invoke(cli, ["explain", path, "--detail"], env={"COLUMNS": "240"})
    assert text.exit_code == 0 and "model switched" in text.stdout and "one-model $0.0083" in text.stdout
    assert "switching models mid-session may cause instability (K3's guidance)" in text.stdout


def test_a_switch_translates_spans_not_tokens() -> None:
    """A billion-token prompt, a call on another model and back: each cache's prefix is found span by span."""
    prompt = (Span(0, 0, 10**9),)
    calls = [
        Request(0.0, 0, prompt, turn_start=10**9),
        Request(1.0, 10**9, (Span(1, 0, 1000),), turn_start=10**9),  # on the other model: cold
        Request(2.0, 10**9 + 1000, (Span(2, 0, 1000),), turn_start=10**9 + 1000),  # back: call 1 is cached
    ]
    ideal = CacheModel(Kind.IDEAL)
    first, other, back = simulate(calls, ideal, ["kimi-k3", "kimi-k3.1-pro", "kimi-k3"])
    assert (first.hit, other.hit, back.hit) == (0, 0, 10**9)
    assert other.misses[0] == MissPart(Reason.MODEL_SWITCH, 10**9, 0)
    assert back.misses[0] == MissPart(Reason.MODEL_SWITCH, 1000, 10**9)  # call 2's new tokens, on the other model


def test_a_narrow_table_codes_the_switch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "70")
    result = CliRunner().invoke(cli, ["bill", str(switching_log(tmp_path))])
    assert result.exit_code == 0, result.output + result.stderr
    rows = [line.split() for line in result.stdout.splitlines()[2:6]]
    assert [row[-1] for row in rows] == ["cold", "blk", "sw", "sw"]
    assert "sw=model-switch" in result.stdout


def test_a_kept_span_grown_in_place_stays_cached_behind_it() -> None:
    """Found by the generator above, on one cache: a prompt kept to the end of a span and grown from there (the
    same run, contiguous) joins the two into one span; the shorter one it replaces had been used by the last
    request, and the prompt after it, sent again, hits it (it was a miss: the join dropped its liveness)."""
    first = (Span(0, 0, 1), Span(1, 0, 1), Span(0, 0, 1))
    calls = [
        Request(0.0, 0, first, turn_start=0),
        Request(1.0, 1, (Span(0, 1, 1),), turn_start=0),  # token 0 kept, its run grown by one
        Request(2.0, 0, first, turn_start=0),  # the first prompt again: its first two tokens are cached
    ]
    rule = CacheModel(Kind.named("anthropic"), min_tokens=1)
    assert [o.hit for o in simulate(calls, rule)] == [0, 0, 2]
    assert [hit for hit, _, _ in reference_run(calls, rule)] == [0, 0, 2]


def test_a_checkpoint_run_starting_at_the_limit_is_found() -> None:
    """Found by the generator above, on one cache: `shared:4` keeps every 4th position the first request
    computed (a run from 4 to 8); the third request, 8 tokens of it, can hit at most 4 (one token computed), and
    the run's first checkpoint is there (it was a miss: the lookup passed over a run starting at its limit)."""
    first = (Span(0, 0, 8), Span(0, 0, 1))
    calls = [
        Request(0.0, 0, first, turn_start=0),
        Request(0.0, 0, (Span(0, 0, 1),), turn_start=0),
        Request(0.0, 0, (Span(0, 0, 8),), turn_start=0),
    ]
    shared = CacheModel(Kind.SHARED, block=4)
    assert [o.hit for o in simulate(calls, shared)] == [0, 0, 4]
    assert [hit for hit, _, _ in reference_run(calls, shared)] == [0, 0, 4]
