"""The trace simulator against the rules computed independently, the pool's guarantees, and the fleet."""

from __future__ import annotations

import json
import math
import random
import tracemalloc
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from kcost.cache.model import parse_cache_model
from kcost.cli import cli
from kcost.fleet.cluster import ClusterCache
from kcost.fleet.pool import EntryKind, Pool, PoolTypeError
from kcost.fleet.prefill import EXACT_TIMES, SKETCH_ACCURACY, Percentiles
from kcost.fleet.replay import Run, simulate
from kcost.fleet.requests import TraceRequest, read_trace
from kcost.fleet.routing import Ring
from kcost.fleet.spec import Failure, FleetSpec
from tests.conftest import ROOT, SHARED, heavy_imports

FIXTURE = str(ROOT / "tests" / "fixtures" / "traces" / "synthetic-400.jsonl")
CONVERSATION = SHARED / "traces" / "conversation_trace.jsonl"
TRACES = [FIXTURE] + ([str(CONVERSATION)] if CONVERSATION.exists() else [])


def leading_seen(blocks: tuple[int, ...], full: int, seen: set[int]) -> int:
    n = 0
    while n < full and blocks[n] in seen:
        n += 1
    return n


def expected_hits(requests: list[TraceRequest], model: str) -> Iterator[int]:
    """Unlimited capacity, no TTL: the rules of the issue, computed from scratch."""
    seen: set[int] = set()
    checkpoints: set[int] = set()
    for r in requests:
        full, cap = r.input // 512, (r.input - 1) // 512
        shared = leading_seen(r.blocks, full, seen)
        if model == "ideal":
            hit = min(shared, cap)
        elif model == "shared:6144":  # a checkpoint on every 6,144-token boundary a request computed
            cap_s = (r.input - 1) // 6144 * 12
            hit = next((n for n in range(min(shared, cap_s) // 12 * 12, 0, -12) if r.blocks[n - 1] in checkpoints), 0)
            checkpoints.update(r.blocks[n - 1] for n in range((hit // 12 + 1) * 12, cap_s + 1, 12))
        else:
            hit = next((n for n in range(min(shared, cap), 0, -1) if r.blocks[n - 1] in checkpoints), 0)
            checkpoints.update(r.blocks[n - 1] for n in {min(shared, cap), cap} if n > hit)
        seen.update(r.blocks[:full])
        yield hit * 512


@pytest.mark.parametrize("path", TRACES)
@pytest.mark.parametrize("model", ["ideal", "k3", "shared:6144"])
def test_hits_follow_the_rules_token_for_token(path: str, model: str) -> None:
    requests = list(read_trace(path))[:3000]
    cache = ClusterCache(parse_cache_model(f"{model}{',' if ':' in model else ':'}ttl=inf"), None)
    assert [cache.serve(r) for r in requests] == list(expected_hits(requests, model))


@st.composite
def small_traces(draw: st.DrawFn) -> list[TraceRequest]:
    """Conversations that grow turn by turn, interleaved; chained ids from the conversation and the turn."""
    requests, ids = [], {}
    lengths: dict[int, int] = {}
    for i in range(draw(st.integers(5, 60))):
        conv = draw(st.integers(0, 6))
        length = lengths.get(conv, 0) + draw(st.integers(100, 3000))
        lengths[conv] = length
        blocks = tuple(ids.setdefault((conv, b), len(ids)) for b in range(-(-length // 512)))
        # the last, partial block has an id of its own
        if length % 512:
            blocks = (*blocks[:-1], ids.setdefault(("partial", i), len(ids)))
        requests.append(TraceRequest(float(i), length, 10, blocks))
    return requests


@settings(max_examples=60, deadline=None)
@given(trace=small_traces())
def test_ideal_hit_rate_never_falls_as_capacity_grows(trace: list[TraceRequest]) -> None:
    hits = []
    for pages in (1, 2, 4, 8, 16, 32, None):
        cache = ClusterCache(parse_cache_model("ideal:ttl=inf"), pages)
        hits.append(sum(cache.serve(r) for r in trace))
    assert hits == sorted(hits)


def test_pinned_entries_are_never_evicted() -> None:
    pool = Pool(capacity=3, ttl=None)
    pinned = [pool.put(EntryKind.KV, k, 1, 0.0) for k in range(3)]
    assert pool.put(EntryKind.KV, 99, 1, 1.0) is None  # full of pinned entries: nothing fits
    pinned[1][4] -= 1  # the request in flight lets go of one
    assert pool.put(EntryKind.KV, 99, 1, 2.0) is not None
    assert pool.find(EntryKind.KV, 1, 3.0) is None and pool.find(EntryKind.KV, 0, 3.0) is not None


def test_a_page_read_as_the_wrong_kind_raises() -> None:
    pool = Pool(capacity=None, ttl=None)
    block = pool.put(EntryKind.KV, 7, 1, 0.0)
    assert block is not None and pool.read(block, EntryKind.KV) == 7
    with pytest.raises(PoolTypeError):
        pool.read(block, EntryKind.CHECKPOINT)


def test_expired_entries_never_hit() -> None:
    cache = ClusterCache(parse_cache_model("ideal:ttl=300"), None)
    first = TraceRequest(0.0, 2048, 1, (1, 2, 3, 4))
    assert cache.serve(first) == 0
    assert cache.serve(TraceRequest(300.0, 2048, 1, (1, 2, 3, 4))) == 1536  # used again just in time
    assert cache.serve(TraceRequest(600.5, 2048, 1, (1, 2, 3, 4))) == 0  # 300.5 s since: gone


def test_checkpoints_cost_capacity_like_long_prompts() -> None:
    """A checkpoint takes 64 pages (449 MB), as much as 32,768 tokens of KV."""
    from kcost.fleet.pool import pages_for

    assert pages_for(EntryKind.CHECKPOINT) == 64 and pages_for(EntryKind.KV) == 1


def sessions_trace(n: int = 2000) -> list[TraceRequest]:
    """Many sessions, each a few growing turns, with session ids (kcost's own trace shape)."""
    out = []
    for i in range(n):
        session, turn = i % 400, i // 400
        length = 1024 * (turn + 1)
        blocks = tuple(session * 100 + b for b in range(length // 512))
        out.append(TraceRequest(float(i), length, 10, blocks, f"s{session}"))
    return out


def test_failover_spreads_over_many_clusters_with_consistent_hashing() -> None:
    trace = sessions_trace()
    spec = FleetSpec(clusters=16, failures=(Failure(3, 0.0, 10_000.0),))
    k3 = parse_cache_model("k3")
    consistent, naive = simulate(trace, [Run(k3, spec), Run(k3, replace(spec, secondary="successor"))])
    assert sum(t.recovery_requests > 0 for t in consistent) >= 10
    assert [c for c, t in enumerate(naive) if t.recovery_requests] == [4]
    assert consistent[3].requests == naive[3].requests == 0


def test_the_ring_gives_a_distinct_secondary() -> None:
    ring = Ring(16)
    for key in map(str, range(500)):
        primary, secondary = ring.place(key)
        assert primary != secondary


def trace_cli(*args: str) -> str:
    result = CliRunner().invoke(cli, ["trace", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_workers_give_byte_identical_json() -> None:
    args = [FIXTURE, "--clusters", "4", "--capacity", "200K,inf", "--fail", "1@100-400", "--class-budget", "long=30%",
            "--format", "json"]  # fmt: skip
    assert trace_cli(*args, "--workers", "2") == trace_cli(*args, "--workers", "1")


def test_trace_report_and_curve_picture(tmp_path: Path) -> None:
    picture = tmp_path / "curve.svg"
    report = json.loads(trace_cli(FIXTURE, "--cache", "k3", "--cache", "ideal", "--capacity", "100K,1M,inf",
                                  "--plot", str(picture), "--format", "json"))  # fmt: skip
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(report, json.loads(CliRunner().invoke(cli, ["schema", "trace"]).stdout))
    assert [(p["cache"].split(":")[0], p["capacity"]) for p in report["curve"]] == [
        ("k3", "100K"),
        ("k3", "1M"),
        ("k3", "inf"),
        ("ideal", "100K"),
        ("ideal", "1M"),
        ("ideal", "inf"),
    ]
    svg = ET.parse(picture).getroot()
    assert svg.tag.endswith("svg")
    lines = list(svg.iter("{http://www.w3.org/2000/svg}polyline"))
    assert len(lines) == 2 and all(len(line.get("points", "").split()) == 3 for line in lines)
    texts = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")]
    assert "unlimited" in texts and "100K" in texts and "1M" in texts  # the capacities, on a log axis
    assert svg.find("{http://www.w3.org/2000/svg}title").text == "Hit rate by capacity: synthetic-400.jsonl"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--capacity", "lots"], "--capacity"),
        (["--fail", "99@1-2"], "--fail"),
        (["--fail", "1@5-2"], "--fail"),
        (["--class-budget", "short=3"], "--class-budget"),
        (["--plot", "curve.png"], "--plot"),
    ],
)
def test_bad_trace_options_exit_2(args: list[str], says: str) -> None:
    result = CliRunner().invoke(cli, ["trace", FIXTURE, "--clusters", "4", *args])
    assert result.exit_code == 2 and says in result.stderr and "Traceback" not in result.output


def test_a_bad_trace_line_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "t.jsonl"
    bad.write_text('{"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1, 2]}\n'
                   '{"timestamp": 1, "input_length": 600, "output_length": 1, "hash_ids": [1]}\n')  # fmt: skip
    result = CliRunner().invoke(cli, ["trace", str(bad)])
    assert result.exit_code == 2 and f"{bad}:2: hash_ids" in result.stderr


def test_kcost_trace_lines_with_session_ids(tmp_path: Path) -> None:
    """kcost's own trace shape: seconds, token counts, blocks and a session id that decides placement."""
    lines = []
    for i in range(40):
        session = f"user-{i % 5}"
        turn = i // 5
        blocks = [1000 * (i % 5) + b for b in range(2 * (turn + 1))]
        lines.append(json.dumps({"time": i * 2.0, "input_tokens": 1024 * (turn + 1), "output_tokens": 50,
                                 "blocks": blocks, "session": session}))  # fmt: skip
    path = tmp_path / "mine.jsonl"
    path.write_text("\n".join(lines) + "\n")
    requests = list(read_trace(str(path)))
    assert [r.session for r in requests[:5]] == [f"user-{i}" for i in range(5)] and requests[7].time == 14.0
    report = json.loads(trace_cli(str(path), "--cache", "ideal", "--clusters", "3", "--format", "json"))
    (point,) = report["curve"]
    # every turn after a session's first re-sends its previous prompt (1024 x turn tokens): all hit
    assert point["hit_tokens"] == sum(1024 * (i // 5) for i in range(40))


@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.floats(0, 1e4, allow_nan=False), min_size=1, max_size=300), q=st.floats(0, 1))
def test_time_percentiles_are_exact_while_they_fit(values: list[float], q: float) -> None:
    times = Percentiles()
    for value in values:
        times.add(value)
    ordered = sorted(values)
    assert times.percentile(q) == ordered[max(0, math.ceil(q * len(values)) - 1)]


def test_time_percentiles_past_the_exact_limit_stay_within_the_sketch_bound() -> None:
    rng = random.Random(5)
    values = [rng.lognormvariate(0, 2) for _ in range(EXACT_TIMES + 20_000)] + [0.0] * 100
    halves = [Percentiles(), Percentiles()]
    for i, value in enumerate(values):
        halves[i % 2].add(value)
    merged, reverse = Percentiles.merged(halves), Percentiles.merged(halves[::-1])
    ordered = sorted(values)
    for q in (0.0, 0.001, 0.5, 0.9, 0.99, 1.0):
        true = ordered[max(0, math.ceil(q * len(values)) - 1)]
        got = merged.percentile(q)
        assert got == reverse.percentile(q)  # the same whatever the order of the parts
        assert abs(got - true) <= SKETCH_ACCURACY * true
    assert merged.count == len(values) and merged.exact is None
    assert len(merged.buckets) < 20_000  # bounded by the values' range, not their number


def test_unlimited_pool_memory_is_flat_in_the_number_of_requests() -> None:
    """A trace of new conversations every 10 s, under the default TTL and no capacity limit: the pool and the
    ids it remembers stay within what a window of the trace holds."""

    def peak(n: int) -> int:
        requests = [TraceRequest(10.0 * i, 4096, 10, tuple(range(8 * i, 8 * i + 8))) for i in range(n)]
        tracemalloc.start()
        simulate(requests, [Run(parse_cache_model("k3"), FleetSpec(), times=True)])
        top = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return top

    assert peak(8_000) < 1.25 * peak(2_000)


def test_a_dask_cluster_gives_the_report_of_one_process() -> None:
    """`--scheduler`: the clusters' replays as tasks on a Dask cluster started here; byte-identical output."""
    distributed = pytest.importorskip("distributed")
    args = [
        "--clusters",
        "4",
        "--fail",
        "1@50-300",
        "--capacity",
        "2M",
        "--cache",
        "k3",
        "--cache",
        "ideal",
        "--format",
        "json",
    ]
    alone = trace_cli(FIXTURE, *args)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
        on_dask = trace_cli(FIXTURE, *args, "--scheduler", cluster.scheduler_address)
    assert on_dask == alone
    assert json.loads(alone)["failure"]["recovery"]["consistent"]["clusters"] >= 1


def test_a_trace_to_json_imports_neither_pydantic_nor_rich(tmp_path: Path) -> None:
    """The trace path is the parse and the replay: no validation library, no terminal toolkit."""
    out = str(tmp_path / "out.json")
    assert heavy_imports([["trace", FIXTURE, "--format", "json", "-o", out]], tmp_path) == []
    assert json.loads((tmp_path / "out.json").read_text())["curve"][0]["requests"] == 400
