"""A bill with its turns written as JSON where it is made (`kcost.billing.bills.bill` with `json_turns`: what a worker
that read a log sends back to a run writing JSON) against the bill itself, each turn written by the JSON writer.

A session billed as reported from its usage alone is written from each turn's plain figures, without a
`TurnBill`; it must give the same text turn for turn, the same models priced and the same bill otherwise. Held to
that over every log of the project (fixtures and shared samples, each agent's format), under cache models that
bill writes and those that do not, writes kept an hour, the session's model and others (tiers, hours of the day),
`--model logged`, `--prices-at`, and over made sessions: usage in every shape (none, all hit, all miss, writes
above the miss), times on several days and none, models switched, money as text and as numbers.
"""

from __future__ import annotations

import dataclasses
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcost.billing.bills import bill
from kcost.cache.model import parse_cache_model
from kcost.errors import InputError
from kcost.model.calls import Usage
from kcost.model.session import CallRecord, Session
from kcost.pricing.prices import load_prices
from kcost.readers import read_all
from kcost.results.bill import SessionBill, WrittenTurns
from kcost.results.common import written
from tests.conftest import ROOT, generate_claude_logs, project_logs

PRICES = load_prices()
CACHES = [parse_cache_model(name) for name in ("k3", "anthropic", "anthropic:ttl=3600", "openai", "none", "ideal")]
MODELS = [None, "logged", "deepseek-v4-pro", "claude-sonnet-4-5", "kimi-k3"]
def both(session: Session, numbers: bool, **terms: object) -> tuple[SessionBill | str, SessionBill | str]:
    """The bill written where it is made, and the bill with its turns written after: each as its error's text
    where it fails."""
    try:
        there: SessionBill | str = bill(session, json_turns=numbers, **terms)  # type: ignore[arg-type]
    except InputError as exc:
        there = str(exc)
    try:
        made = bill(session, **terms)  # type: ignore[arg-type]
    except InputError as exc:
        return there, str(exc)
    turns = WrittenTurns(written(turn, numbers) for turn in made.turns)
    turns.priced = made.priced_models()
    return there, dataclasses.replace(made, turns=turns)


def same(there: SessionBill | str, here: SessionBill | str) -> None:
    assert type(there) is type(here), (there, here)
    if isinstance(there, str):
        assert there == here
        return
    assert isinstance(here, SessionBill)
    assert isinstance(there.turns, WrittenTurns) and isinstance(here.turns, WrittenTurns)
    assert list(there.turns) == list(here.turns)
    assert there.turns.priced == here.turns.priced == here.priced_models()
    for name in SessionBill.__dataclass_fields__:
        if name != "turns":
            assert getattr(there, name) == getattr(here, name), name
    assert [written(there.summary, n) for n in (False, True)] == [written(here.summary, n) for n in (False, True)]


def project_sessions(generated: Path) -> list[Session]:
    """Every log of the project read without prompts (fixtures, the shipped samples, the shared samples) and
    logs of the benchmark's Claude Code generator."""
    sessions = []
    for path in project_logs(generated):
        try:
            sessions += read_all([str(path)], prompts=False, workers=1).sessions
        except InputError:
            continue  # not a log (a trace, a price file) or a bad one, as its own tests say
    return sessions


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> list[Session]:
    folder = tmp_path_factory.mktemp("generated")
    generate_claude_logs(folder, 2.0, 11)
    return project_sessions(folder)


def test_the_project_has_logs_of_every_kind_billed_as_reported(logged: list[Session]) -> None:
    agents = {s.agent for s in logged if any(s.reported)}
    assert len(logged) >= 50 and {"claude-code", "codex", "kimi-cli", "kimi-code", "kimi-api"} <= agents
    assert sum(len(s.records) for s in logged) >= 300
    assert any(r.reported is None for s in logged for r in s.records)  # calls a reported bill leaves out


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("cache", CACHES, ids=lambda c: c.info().name)
def test_every_log_billed_as_reported_is_written_as_its_turns_are(
    logged: list[Session], cache: object, model: str | None
) -> None:
    for session in logged:
        for numbers in (False, True):
            same(*both(session, numbers, cache=cache, prices=PRICES, usage="reported", model=model))


@pytest.fixture(scope="module")
def prompted(tmp_path_factory: pytest.TempPathFactory) -> list[Session]:
    """Logs with their prompts rebuilt (simulated), each agent's, the generator's Claude Code logs among them."""
    folder = tmp_path_factory.mktemp("prompted")
    generate_claude_logs(folder, 1.0, 5)
    paths = [ROOT / "sample_sessions", folder, *sorted((ROOT / "tests" / "fixtures").iterdir())]
    sessions = []
    for path in paths:
        if path.is_dir():
            try:
                sessions += read_all([str(path)], workers=1, lenient=True).sessions
            except InputError:
                continue
    return sessions


@pytest.mark.parametrize("model", [None, "logged"])
@pytest.mark.parametrize("usage", ["auto", "simulated", "reported"])
@pytest.mark.parametrize("cache", [*CACHES[:4], parse_cache_model("k3:auto")], ids=str)
def test_a_bill_with_prompts_is_written_as_its_turns_are(
    prompted: list[Session], usage: str, cache: object, model: str | None
) -> None:
    """Where prompts are rebuilt and simulated, each turn's misses by cause, its writes and the reported figures
    set beside the simulated ones (a Kimi log's checks) are written as the bill's turns are."""
    assert sum(bool(s.requests) for s in prompted) >= 15
    assert {"claude-code", "kimi-cli", "kimi-code"} <= {s.agent for s in prompted if s.requests}
    checked = 0
    for session in prompted:
        for numbers in (False, True):
            there, here = both(session, numbers, cache=cache, prices=PRICES, usage=usage, model=model)
            same(there, here)
            checked += isinstance(here, SessionBill) and any('"check": {' in t for t in here.turns)
    assert checked or usage == "simulated"


def test_rates_of_another_day_are_the_same_either_way(logged: list[Session]) -> None:
    for session in logged[::5]:
        for at in (date(2025, 1, 1), date(2026, 6, 1)):
            same(*both(session, False, cache=CACHES[0], prices=PRICES, usage="reported", model="logged",
                       at=at))  # fmt: skip


MODEL_IDS = ["claude-sonnet-4-5-20250929", "claude-opus-4-6", "kimi-k3", "deepseek-v4-pro", "gpt-5", None]
DAY = 86_400


@st.composite
def usages(draw: st.DrawFn) -> Usage | None:
    if draw(st.integers(0, 9)) == 0:
        return None
    prompt = draw(st.sampled_from([0, 1, 511, 4_000, 199_999, 200_000, 400_000, 10**9]) | st.integers(0, 10**6))
    cached = draw(st.sampled_from([0, prompt]) | st.integers(0, prompt))
    written_ = draw(st.sampled_from([0, prompt - cached, prompt]) | st.integers(0, prompt))
    hour = draw(st.none() | st.integers(0, written_ + 5))
    return Usage(prompt=prompt, cached=cached, output=draw(st.integers(0, 10**5)), written=written_, written_1h=hour)


@st.composite
def sessions(draw: st.DrawFn) -> Session:
    start = draw(st.sampled_from([1_735_689_600, 1_770_000_000, 1_780_000_000]))  # 2025-01-01, 2026
    records = []
    for _ in range(draw(st.integers(1, 12))):
        time = draw(st.none() | st.floats(start, start + 3 * DAY, allow_nan=False))
        model = draw(st.sampled_from(MODEL_IDS))
        records.append(CallRecord(reported=draw(usages()), time=time, model=model, label=draw(st.none() | st.text())))
    model = draw(st.sampled_from(["kimi-k3", "claude-sonnet-4-5", "deepseek-v4-pro"]))
    return Session(source="made.jsonl", name="made", model=model, records=tuple(records), token_counts="reported")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(session=sessions(), cache=st.sampled_from(CACHES), model=st.sampled_from(MODELS), numbers=st.booleans(),
       at=st.none() | st.sampled_from([date(2025, 3, 1), date(2026, 2, 10)]))  # fmt: skip
def test_made_sessions_are_written_as_their_turns_are(session: Session, cache: object, model: str | None,
                                                       numbers: bool, at: date | None) -> None:  # fmt: skip
    same(*both(session, numbers, cache=cache, prices=PRICES, usage="reported", model=model, at=at))


def made(*records: CallRecord, model: str = "kimi-k3") -> Session:
    return Session(source="made.jsonl", name="made", model=model, records=records, token_counts="reported")


@pytest.mark.parametrize("cache", CACHES, ids=lambda c: c.info().name)
def test_hit_rates_below_a_ten_thousandth_are_written_as_orjson_writes_them(cache: object) -> None:
    """orjson writes a float under 1e-4 otherwise than repr (`1e-6`, `0.00001`): the compiled writer asks it."""
    hits = [*range(0, 150), 999_999, 1_000_000, *range(1_000, 1_000_000, 99_991)]
    session = made(*(CallRecord(reported=Usage(prompt=1_000_000, cached=n, output=1)) for n in hits),
                   CallRecord(reported=Usage(prompt=3 * 10**8, cached=7, output=0)))  # fmt: skip
    there, here = both(session, False, cache=cache, prices=PRICES, usage="reported")
    same(there, here)
    assert isinstance(there, SessionBill)
    assert '"hit_rate": 1e-6' in there.turns[1] and '"hit_rate": 0.00001' in there.turns[10]


def test_times_labels_and_models_are_written_as_the_json_writer_writes_them() -> None:
    """Times at the edges of what the compiled writer works out itself (before 1970, the last millisecond of the
    year 9999, a microsecond rounded half to even) and text with every character JSON escapes."""
    times = [None, -86_400.25, -0.0005, 0.0, 0.0005, 0.0015, 1e-7, 1_770_000_000.9994999, 1_770_000_000.9995,
             951_782_400.0, 4_107_542_399.999, 253_402_300_799.999]  # fmt: skip
    texts = [None, "", "plain", "".join(map(chr, range(0x21))), '"\\/\x7f', "é ü 漢字 😀 \u2028", "a\nb"]
    records = [CallRecord(reported=Usage(prompt=100, cached=n % 100, output=3, written=n % 7), time=t,
                          label=texts[n % len(texts)], model=texts[(n + 1) % len(texts)] or "kimi-k3")
               for n, t in enumerate(times * 2)]  # fmt: skip
    for model in (None, "logged"):
        there, here = both(made(*records), False, cache=CACHES[1], prices=PRICES, usage="reported", model=model)
        same(there, here)


def test_figures_past_2_to_the_53_are_written_exactly() -> None:
    """A count past 2^53 (no reader makes one: past kcost's bounds) is written as the bill itself is."""
    huge = made(CallRecord(reported=Usage(prompt=2**60, cached=2**59, output=2**58)),
                CallRecord(reported=Usage(prompt=10, cached=0, output=1)))  # fmt: skip
    same(*both(huge, False, cache=CACHES[0], prices=PRICES, usage="reported"))


def test_a_plain_turn_holds_exact_money() -> None:
    """The plain figures are the bill's exact amounts, not rounded: a turn of one token each way."""
    session = Session(source="one.jsonl", name="one", model="kimi-k3", token_counts="reported",
                      records=(CallRecord(reported=Usage(prompt=3, cached=1, output=1)),))  # fmt: skip
    there = bill(session, cache=CACHES[0], prices=PRICES, usage="reported", json_turns=False)
    rates = PRICES.entry("kimi-k3")[1].period(None).at(3, None)
    expected = (rates.input_cache_hit + 2 * rates.input_cache_miss + rates.output) / Decimal(10**6)
    assert there.summary.total == expected
    assert f'"total": "{expected.normalize():f}"' in there.turns[0]  # type: ignore[operator]


@settings(max_examples=2_000, deadline=None)
@given(
    time=st.floats(-3 * DAY, 4e9, allow_nan=False)
    | st.integers(0, 4 * 10**9).map(lambda s: s + 0.9999995)
    | st.sampled_from([0.0, 0.9999994, 0.9999995, 86_399.9999996, 86_399.999999, 1e12, float("nan")])
)
def test_a_calls_day_is_the_day_datetime_gives(time: float) -> None:
    """`Pricer` works a call's UTC day out from its whole seconds (each date made once): the day `datetime`
    gives, or the error it raises."""
    from datetime import datetime, timezone

    from kcost.pricing.charges import Pricer

    pricer = Pricer(PRICES, PRICES.entry("kimi-k3")[1], date(2026, 1, 1), made(CallRecord()), by_log=False)
    outcomes = []
    for day_of in (pricer._day, lambda t: datetime.fromtimestamp(t, timezone.utc).date()):
        try:
            outcomes.append(day_of(time))
        except (ValueError, OverflowError) as exc:
            outcomes.append(f"{type(exc).__name__}: {exc}")
    assert outcomes[0] == outcomes[1]
