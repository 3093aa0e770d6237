"""The simulator against the seed figures, hand-worked scenarios, and a slow token-by-token reference."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcost.billing.bills import bill
from kcost.cache.model import CacheModel, Kind, parse_cache_model
from kcost.cache.simulator import simulate
from kcost.model.requests import MissPart, Reason, Request, Span
from kcost.pricing.prices import load_prices
from kcost.readers.specs.models import Prefix, SessionSpec, Turn
from kcost.readers.specs.turnspec import build
from tests.cache.reference import reference_run
from tests.conftest import build_or_reject, turn_specs

PRICES = load_prices()


def lesson(cache: str, *, warm: bool = True, turns: int = 50):  # type: ignore[no-untyped-def]
    spec = SessionSpec(prefix=Prefix(tokens=400_000, warm=warm), turns=[Turn(keep=400_000, new=4_000, repeat=turns)])
    return bill(build(spec, source="t", name="t"), cache=parse_cache_model(cache), prices=PRICES)


class TestSeedFigures:
    """Seed lesson: 400K prefix + 4K new per turn; K3 prices $0.30 hit, $3.00 miss per million."""

    def test_one_turn_miss_is_1_212(self) -> None:
        turn = lesson("none").turns[0]
        assert (turn.miss_tokens, turn.total) == (404_000, Decimal("1.212"))

    def test_one_turn_hit_is_0_132_under_ideal(self) -> None:
        turn = lesson("ideal").turns[0]
        assert (turn.hit_tokens, turn.miss_tokens, turn.total) == (400_000, 4_000, Decimal("0.132"))

    def test_k3_turn_hits_399872_and_costs_0_1323456(self) -> None:
        turn = lesson("k3").turns[0]
        assert (turn.hit_tokens, turn.miss_tokens) == (399_872, 4_128)
        assert turn.total == Decimal("0.1323456")

    def test_fifty_turns(self) -> None:
        miss, hit = lesson("none").summary, lesson("ideal").summary
        assert miss.total == Decimal("60.60")
        assert hit.total == Decimal("6.60")
        assert miss.total - hit.total == Decimal("54.00")
        assert hit.uncached_total == Decimal("60.60") and hit.saved == Decimal("54.00")

    def test_cold_start_pays_turn_one_in_full(self) -> None:
        cold = lesson("ideal", warm=False)
        assert cold.turns[0].total == Decimal("1.212")
        assert cold.summary.total == Decimal("1.212") + 49 * Decimal("0.132")

    def test_only_end_of_prompt_checkpoints_would_miss_everything(self) -> None:
        """cache-model.md: a checkpoint at 403,968 alone cannot serve a request sharing 400,000 tokens."""
        block = 512
        prompt = (Span(0, 0, 400_000), Span(1, 0, 4_000))
        first = Request(0.0, 0, prompt, turn_start=404_000)  # no turn boundary at 400,000
        second = Request(1.0, 400_000, (Span(2, 0, 4_000),), turn_start=400_000)
        out = list(simulate([first, second], CacheModel(Kind.K3, block=block)))
        assert out[1].hit == 0
        assert out[1].misses[0].reason is Reason.NO_CHECKPOINT


class TestScenarios:
    def test_append_only_hits_the_previous_prompt(self) -> None:
        spec = SessionSpec(turns=[Turn(new=1000, output=300), Turn(new=200, output=100)])
        out = list(simulate(build(spec, source="t", name="t").requests, CacheModel(Kind.K3)))
        assert out[0].hit == 0 and out[0].misses == (MissPart(Reason.NEW_INPUT, 1000, 0),)  # nothing carried over
        # 1000 tokens: a checkpoint at 512 (both turn boundaries floor there), so turn 2 hits 512
        assert out[1].hit == 512
        reasons = [m.reason for m in out[1].misses]
        assert reasons == [Reason.BLOCK_GRANULARITY, Reason.OUTPUT_NOT_CACHED, Reason.NEW_INPUT]

    def test_output_caching_makes_the_output_hit(self) -> None:
        spec = SessionSpec(turns=[Turn(new=1000, output=1100), Turn(new=200)])
        reqs = build(spec, source="t", name="t").requests
        off = list(simulate(reqs, CacheModel(Kind.K3)))[1]
        on = list(simulate(reqs, CacheModel(Kind.K3, output=True)))[1]
        assert off.hit == 512 and on.hit == 2048  # floor((1000 + 1100) / 512) * 512

    def test_edit_misses_from_the_edit(self) -> None:
        turns = [Turn(new=2048, output=0), Turn(new=2048), Turn(edit_at=1000, new=10)]
        out = list(simulate(build(SessionSpec(turns=turns), source="t", name="t").requests, CacheModel(Kind.IDEAL)))
        assert out[2].hit == 1000
        changed = [m for m in out[2].misses if m.reason is Reason.PREFIX_CHANGED]
        assert changed and changed[0].at == 1000 and changed[0].tokens == 4096 - 1000

    def test_idle_past_the_ttl_expires_everything(self) -> None:
        turns = [Turn(new=5000), Turn(new=100, idle=301), Turn(new=100, idle=300)]
        out = list(simulate(build(SessionSpec(turns=turns), source="t", name="t").requests, CacheModel(Kind.IDEAL)))
        assert out[1].hit == 0 and out[1].misses[0] == MissPart(Reason.EXPIRED, 5000, 0)
        assert out[2].hit == 5100  # 300 s is still alive: the API was seen to hit after 300 s

    def test_identical_resend_hits_all_but_the_last_token_or_block(self) -> None:
        turns = [Turn(new=3000), Turn(keep=3000, new=0, previous_output="none")]
        reqs = build(SessionSpec(turns=turns), source="t", name="t").requests
        ideal = list(simulate(reqs, CacheModel(Kind.IDEAL)))[1]
        k3 = list(simulate(reqs, CacheModel(Kind.K3)))[1]
        assert (ideal.hit, ideal.misses[0].reason) == (2999, Reason.LAST_TOKEN)
        assert k3.hit == 2560 and k3.misses[0].reason is Reason.BLOCK_GRANULARITY

    def test_shared_block_never_hits_a_prompt_shorter_than_the_block(self) -> None:
        turns = [Turn(new=300, output=200, repeat=10)]
        reqs = build(SessionSpec(prefix=Prefix(tokens=1000), turns=turns), source="t", name="t").requests
        shared = list(simulate(reqs, parse_cache_model("shared:6144")))
        assert all(o.hit == 0 for o in shared)
        assert sum(o.hit for o in simulate(reqs, parse_cache_model("k3"))) > 0

    def test_stripping_reasoning_misses_from_the_first_reasoning(self) -> None:
        turns = [
            Turn(new=1000, output=600, reasoning=400),
            Turn(new=100),
            Turn(new=100, strip_reasoning=True),
        ]
        out = list(simulate(build(SessionSpec(turns=turns), source="t", name="t").requests, CacheModel(Kind.IDEAL)))
        assert out[2].hit == 1000  # turn 1's reasoning starts at token 1000 of turn 2's prompt
        assert out[2].misses[0].reason is Reason.PREFIX_CHANGED and out[2].misses[0].at == 1000


MODELS = st.builds(
    lambda kind, block, every, ttl, output: CacheModel(kind, block=block, every=every, ttl=ttl, output=output),
    st.sampled_from([Kind.K3, Kind.SHARED, Kind.IDEAL, Kind.NONE]),
    st.sampled_from([4, 16, 64]),
    st.sampled_from([None, None, 1, 3]),
    st.sampled_from([None, 30.0, 600.0]),
    st.booleans(),
) | st.builds(  # a provider's rule with breakpoints (Anthropic's: hits end on any token), at the smallest minimum
    lambda ttl, output: CacheModel(Kind.named("anthropic"), ttl=ttl, output=output, min_tokens=1),
    st.sampled_from([None, 30.0, 600.0]),
    st.booleans(),
)


@settings(max_examples=300, deadline=None)
@given(spec=turn_specs(), model=MODELS)
def test_simulator_matches_the_token_by_token_reference(spec: SessionSpec, model: CacheModel) -> None:
    session = build_or_reject(spec)
    fast = list(simulate(session.requests, model))
    slow = list(reference_run(session.requests, model))
    assert [o.hit for o in fast] == [hit for hit, _, _ in slow]
    for outcome, (_, shared, shared_any) in zip(fast, slow, strict=True):
        expired = [m for m in outcome.misses if m.reason is Reason.EXPIRED]
        if model.kind is not Kind.NONE and shared_any > shared and shared < outcome.input:
            assert expired and expired[0].at == shared
            assert expired[0].tokens == min(shared_any, outcome.input) - shared
        else:
            assert not expired


@pytest.mark.parametrize("text", ["k3", "k3:hash=256", "k3:every=1", "shared:6144", "ideal", "none", "k3:output=on"])
def test_labels_round_trip(text: str) -> None:
    model = parse_cache_model(text)
    assert parse_cache_model(model.label) == model


def test_an_expired_checkpoint_stays_gone_when_the_prompt_passes_over_it() -> None:
    """Turn 3 comes back after the TTL and keeps checkpoints only at its own turn boundaries (1536, 2560), so
    the checkpoint at 512 from turn 1 is gone for turn 4's edit at 700 (found by review). What the edit leaves of
    the cached prefix before it, with no checkpoint there, is the edit's miss: unedited, the prompt hits to turn
    3's checkpoint at its end."""
    turns = [Turn(new=600), Turn(new=1000), Turn(new=1000, idle=400), Turn(edit_at=700, new=10)]
    out = list(simulate(build(SessionSpec(turns=turns), source="t", name="t").requests, CacheModel(Kind.K3)))
    assert out[3].hit == 0
    assert out[3].misses[0] == MissPart(Reason.PREFIX_CHANGED, 2600, 0)
