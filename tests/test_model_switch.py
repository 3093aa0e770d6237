"""A model switch is a cause (issue 21): each model's prefix cache is its own, and the misses a switch causes
are named, priced and given K3's guidance as their fix.

The simulator keeps one cache per model a session's calls name; the reference (`tests/cache/reference.py`)
runs each model's requests in its own token-by-token cache, so a generated session with switches is checked
against it. Hand-worked sessions hold the figures.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kcost.cache import CacheModel, Kind, Reason, simulate
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
    alone = [hit for hit, _, _ in reference_run(requests, model)]  # one cache for the whole session
    assert [o.hit for o in fast] == [hit for hit, _, _ in slow]
    for outcome, (hit, shared, shared_any), one in zip(fast, slow, alone, strict=True):
        assert sum(m.tokens for m in outcome.misses) == outcome.miss
        assert [m.at for m in outcome.misses] == sorted(m.at for m in outcome.misses)
        switch = [m for m in outcome.misses if m.reason is Reason.MODEL_SWITCH]
        blamed = max(0, min(one, outcome.input) - hit)
        assert sum(m.tokens for m in switch) == blamed
        if blamed:
            assert len(switch) == 1 and switch[0].at == hit
        # what expired in this model's own cache, less what the switch is blamed for
        expired = [m for m in outcome.misses if m.reason is Reason.EXPIRED]
        end = min(shared_any, outcome.input)
        start = max(shared, hit + blamed)
        if model.kind is not Kind.NONE and end > start and shared < outcome.input:
            assert len(expired) == 1 and (expired[0].at, expired[0].tokens) == (start, end - start)
        else:
            assert not expired


@settings(max_examples=100, deadline=None)
@given(spec=turn_specs(), model=MODELS, key=st.sampled_from([None, "kimi-k3"]))
def test_one_model_runs_as_one_cache(spec, model: CacheModel, key: str | None) -> None:  # type: ignore[no-untyped-def]
    requests = build_or_reject(spec).requests
    keys = [key if i % 2 else None for i in range(len(requests))]  # an unnamed call is on the one before
    assert list(simulate(requests, model, keys)) == list(simulate(requests, model))
