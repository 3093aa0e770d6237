"""What must hold for any turn spec: token conservation, totals that add up, determinism, model ordering."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from kcost.billing.bills import bill, report
from kcost.cache.model import CacheModel, Kind
from kcost.pricing.prices import load_prices
from kcost.readers.specs.models import SessionSpec
from kcost.render import Format, render
from tests.conftest import build_or_reject, turn_specs

PRICES = load_prices()
TTLS = st.sampled_from([None, 30.0, 300.0])


@settings(max_examples=150, deadline=None)
@given(spec=turn_specs(), kind=st.sampled_from(list(Kind)), ttl=TTLS, output=st.booleans())
def test_tokens_are_conserved_and_totals_add_up(spec: SessionSpec, kind: Kind, ttl: float | None, output: bool) -> None:
    session = build_or_reject(spec)
    b = bill(session, cache=CacheModel(kind, block=16, ttl=ttl, output=output), prices=PRICES)
    for t in b.turns:
        assert t.hit_tokens + t.miss_tokens == t.input_tokens
        assert sum(m.tokens for m in t.misses) == t.miss_tokens
        assert t.total == t.hit_cost + t.miss_cost + t.output_cost
        assert all(m.at >= 0 and m.at + m.tokens <= t.input_tokens for m in t.misses)
    s = b.summary
    assert s.turns == len(b.turns)
    assert s.input_tokens == sum(t.input_tokens for t in b.turns)
    assert s.hit_tokens == sum(t.hit_tokens for t in b.turns)
    assert s.output_tokens == sum(t.output_tokens for t in b.turns)
    assert s.total == sum((t.total for t in b.turns), Decimal(0)) == b.turns[-1].cumulative
    assert sum(m.tokens for m in s.miss_by_reason.values()) == s.miss_tokens


@settings(max_examples=150, deadline=None)
@given(spec=turn_specs(), block=st.sampled_from([4, 16, 64]), ttl=TTLS, output=st.booleans())
def test_cache_models_are_ordered(spec: SessionSpec, block: int, ttl: float | None, output: bool) -> None:
    """cost(ideal) <= cost(k3, every block) <= cost(k3) <= cost(none); cost(ideal) <= cost(shared) <= cost(none)."""
    session = build_or_reject(spec)

    def cost(kind: Kind, every: int | None = None) -> Decimal:
        model = CacheModel(kind, block=block, every=every, ttl=ttl, output=output)
        return bill(session, cache=model, prices=PRICES).summary.total

    ideal, every, k3, none = cost(Kind.IDEAL), cost(Kind.K3, 1), cost(Kind.K3), cost(Kind.NONE)
    shared = cost(Kind.SHARED, 1)
    assert ideal <= every <= k3 <= none
    assert ideal <= shared <= none


@settings(max_examples=40, deadline=None)
@given(spec=turn_specs())
def test_json_is_byte_identical_across_runs(spec: SessionSpec) -> None:
    caches = [CacheModel(Kind.K3), CacheModel(Kind.IDEAL)]
    first = render(report([build_or_reject(spec)], caches, PRICES), Format.JSON)
    again = render(report([build_or_reject(spec)], caches, PRICES), Format.JSON)
    assert first == again


@settings(max_examples=1000, deadline=None)
@given(value=st.decimals(allow_nan=False, allow_infinity=False) | st.builds(
    lambda digits, exponent, sign: Decimal((sign, tuple(int(d) for d in str(digits)), exponent)),
    st.integers(0, 10**30), st.integers(-40, 40), st.integers(0, 1)))  # fmt: skip
def test_money_is_written_as_its_exact_digits(value: Decimal) -> None:
    """Money as the one writer writes it: the exact digits in plain notation, no trailing zeros, no exponent, `0`
    for any zero; whatever the value's own exponent."""
    from kcost.results import money_text

    text = format(value, "f")  # the oracle: plain notation, then trimmed
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    assert money_text(value) == (text if text not in ("", "-0") else "0")
    assert Decimal(money_text(value)) == value and "E" not in money_text(value)
