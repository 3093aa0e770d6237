"""The capacity curve's one stack pass against its oracle, one pool a capacity (`ClusterCache`): the same tallies
at every capacity (hit tokens, evictions, recovery, times to first token) in both engines, on hypothesis-made
traces and the shipped ones (the compiled core's curve in one pass, and split in passes on threads, as a machine
of several processors runs it); and a curve's report point for point the report of each capacity alone."""

from __future__ import annotations

import json
from dataclasses import replace
from itertools import islice
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcost.cache.model import parse_cache_model
from kcost.cli import cli
from kcost.fleet.core import passes
from kcost.fleet.engines import default_engine, replay
from kcost.fleet.replay import ClusterTally, Run, simulate
from kcost.fleet.requests import read_trace
from kcost.fleet.spec import Failure, FleetSpec
from tests.conftest import ROOT, SHARED

FIXTURE = ROOT / "tests" / "fixtures" / "traces" / "synthetic-400.jsonl"
TRACES = [SHARED / "traces" / name for name in ("conversation_trace.jsonl", "synthetic_trace.jsonl")]
SHIPPED = [FIXTURE] + [path for path in TRACES if path.exists()]
ENGINES = ["python"] + (["compiled"] if default_engine() == "compiled" else [])
THREADS = [1, 3]  # the processors the compiled core is told it has: a curve in one pass, or split in passes


def facts(results: list[list[ClusterTally]]) -> list[list[tuple[Any, ...]]]:
    """What a report is made of, per run and cluster."""

    def times(ttft: dict[str, Any]) -> dict[str, tuple[int, float, float]]:
        return {c: (p.count, p.percentile(0.5), p.percentile(0.99)) for c, p in ttft.items()}

    return [[(t.requests, t.input, t.hit, t.output, t.evictions, t.recovery_requests, t.recovery_misses,
              times(t.ttft), times(t.ttft_budgeted)) for t in tallies] for tallies in results]  # fmt: skip


def curve_runs(model: str, capacities: list[int | None], spec: FleetSpec) -> list[Run]:
    cache = parse_cache_model(model)
    return [Run(cache, replace(spec, capacity_pages=c), times=not i) for i, c in enumerate(capacities)]


def check(path: Path, runs: list[Run]) -> None:
    """Each engine's curve pass gives the oracle's tallies, one pool a capacity."""
    oracle = facts(simulate(read_trace(str(path)), runs))
    for engine in ENGINES:
        for threads in THREADS if engine == "compiled" else [1]:
            with mock.patch("kcost.fleet.core._threads", return_value=threads):
                got, _ = replay(str(path), runs, engine=engine)
            assert facts(got) == oracle, (engine, threads)


@st.composite
def traces(draw: st.DrawFn) -> str:
    """Conversations growing turn by turn, some sharing a prefix, now and then an id twice in one request, at
    gaps that outlive a short TTL."""
    lines, chains = [], {}
    time, next_id = 0.0, 0
    common = list(range(10_000, 10_000 + draw(st.integers(0, 6))))  # a system prompt every conversation starts with
    for _ in range(draw(st.integers(1, 60))):
        conv = draw(st.integers(0, 5))
        chain = chains.setdefault(conv, list(common))
        for _ in range(draw(st.integers(0, 6))):
            chain.append(chain[-1] if chain and draw(st.integers(0, 19)) == 0 else next_id)
            next_id += 1
        if draw(st.integers(0, 24)) == 0:
            chains[conv] = chain = list(common)  # a new conversation in its place
        ids = [*chain, next_id]
        next_id += 1
        size = max(1, len(ids) * 512 - draw(st.integers(0, 511)))
        time += draw(st.sampled_from([0.0, 0.0, 0.5, 3.0, 20.0, 90.0, 700.0]))
        fields = [f'"time": {time}', f'"input_tokens": {size}', f'"output_tokens": {draw(st.integers(0, 300))}',
                  f'"blocks": {json.dumps(ids)}', f'"session": "s{conv}"']  # fmt: skip
        lines.append("{" + ", ".join(fields) + "}")
    return "\n".join(lines) + "\n"


MODELS = ["k3", "k3:ttl=60", "k3:every=2,ttl=30", "k3:ttl=inf", "ideal", "ideal:ttl=20", "shared:1024", "none"]
CAPACITY = st.one_of(st.none(), st.integers(1, 400))
SPECS = st.one_of(
    st.just(FleetSpec()),
    st.just(FleetSpec(checkpoint_bytes=3_000_000)),  # a checkpoint of a few pages: many kept at once
    st.just(FleetSpec(clusters=3, failures=(Failure(1, 5, 200),), long_share=0.3)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=traces(), model=st.sampled_from(MODELS), capacities=st.lists(CAPACITY, min_size=2, max_size=6),
       spec=SPECS)  # fmt: skip
def test_the_curve_pass_gives_every_capacity_its_own_replay(
    tmp_path: Path, text: str, model: str, capacities: list[int | None], spec: FleetSpec
) -> None:
    path = tmp_path / "made.jsonl"
    path.write_text(text)
    check(path, curve_runs(model, capacities, spec))


@pytest.mark.parametrize("model", ["k3:ttl=5", "ideal:ttl=5", "shared:1024,ttl=5"])
def test_a_block_touched_again_as_the_newest_after_its_pool_let_it_go(tmp_path: Path, model: str) -> None:
    """A request's first block is the last one the one before touched, and the pools have let it go in between
    (it expired; a small pool evicted it): it is put again where it is the newest already, and found after."""
    lines = [(0.0, [1, 2, 3]), (100.0, [3, 9, 10]), (101.0, [3, 9, 10, 11]), (102.0, [11]), (102.5, [11, 12])]
    text = "".join(json.dumps({"time": t, "input_tokens": len(ids) * 512, "output_tokens": 10,
                               "blocks": ids, "session": "s"}) + "\n" for t, ids in lines)  # fmt: skip
    path = tmp_path / "newest.jsonl"
    path.write_text(text)
    check(path, curve_runs(model, [None, 3, 60, None], FleetSpec()))


CURVE_MODELS = ["k3", "k3:every=4,ttl=60", "ideal", "shared:1024", "k3:ttl=5"]
CURVE_SPECS = [
    FleetSpec(),
    FleetSpec(checkpoint_bytes=50_000_000),
    FleetSpec(clusters=4, failures=(Failure(1, 60, 400),)),
]
CURVE_CAPACITIES: list[int | None] = [80, 1953, 5859, None, 200]
HEAD = 400  # the requests of a shared trace the pure-Python oracle replays (all of it takes it about 6 s a run)


@pytest.mark.parametrize("model", CURVE_MODELS)
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_the_curve_pass_is_exact_on_the_shipped_traces(path: Path, model: str, tmp_path: Path) -> None:
    """Against the oracle: the shipped fixture whole, the shared traces' first requests."""
    if path != FIXTURE:
        head = tmp_path / path.name
        with path.open(encoding="utf-8") as whole:
            head.write_text("".join(islice(whole, HEAD)), encoding="utf-8")
        path = head
    for spec in CURVE_SPECS:
        check(path, curve_runs(model, CURVE_CAPACITIES, spec))


@pytest.mark.skipif("compiled" not in ENGINES, reason="the compiled trace core is not built")
@pytest.mark.parametrize("model", CURVE_MODELS)
@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_the_compiled_curve_is_each_capacitys_own_replay_on_whole_traces(path: Path, model: str) -> None:
    """The whole shared traces in the compiled core: its one curve pass gives what a replay of each capacity alone
    gives (its pool a capacity, itself held to the oracle by the engines' tests)."""
    if not path.exists():
        pytest.skip("the shared traces are not beside the project")
    for spec in CURVE_SPECS:
        runs = curve_runs(model, CURVE_CAPACITIES, spec)
        alone = [replay(str(path), [run], engine="compiled")[0][0] for run in runs]
        for threads in THREADS:
            with mock.patch("kcost.fleet.core._threads", return_value=threads):
                curve, ran = replay(str(path), runs, engine="compiled")
            assert ran == "compiled"
            assert facts(curve) == facts(alone), threads


@pytest.mark.parametrize("engine", ENGINES)
def test_a_curve_reports_each_capacity_as_its_own_run_does(engine: str) -> None:
    """The hit tokens, evictions and cost of each point are those of `--capacity` that one alone."""

    def points(capacity: str) -> list[dict[str, Any]]:
        result = CliRunner().invoke(cli, ["trace", str(FIXTURE), "--format", "json", "--engine", engine,
                                          "--capacity", capacity])  # fmt: skip
        assert result.exit_code == 0, result.output
        return list(json.loads(result.output)["curve"])

    labels = ["40K", "1M", "3M", "10M", "inf"]
    curve = points(",".join(labels))
    assert [p["capacity"] for p in curve] == labels
    assert curve == [points(label)[0] for label in labels]
    assert [p["hit_tokens"] for p in curve] == sorted(p["hit_tokens"] for p in curve)  # more room, more hits
    assert curve[0]["evictions"] > 0 and curve[-1]["evictions"] == 0


def test_a_curve_splits_in_passes_only_where_threads_would_wait() -> None:
    """One pass a curve on one processor or over several clusters (served request by request); with processors to
    spare, the smaller capacities in one pass and the larger in another, each led by its first run."""
    runs = curve_runs("k3", [None, 1953, 80, 5859, 200], FleetSpec())  # inf, 1M, 40K, 3M, 100K
    ideal = curve_runs("ideal", [80], FleetSpec())
    assert passes(runs, clusters=1, threads=1) == [[0, 1, 2, 3, 4]]
    assert passes(runs, clusters=4, threads=8) == [[0, 1, 2, 3, 4]]
    assert passes(runs, clusters=1, threads=2) == [[0, 3], [1, 2, 4]]
    assert passes(runs, clusters=1, threads=3) == [[0, 3], [1], [2, 4]]
    assert passes([*runs, *ideal], clusters=1, threads=2) == [[0, 1, 2, 3, 4], [5]]  # two passes already
    assert passes(runs[:1], clusters=1, threads=4) == [[0]]
