"""`kcost selfhost`: the memory floor and accelerator counts against figures worked by hand, the API bill against
`kcost bill` and `kcost trace`, the break-even where both cost lines meet, and every figure sourced, dated and
overridable, with bad overrides refused in one line."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from kcost.analysis.selfhost import BOUNDS, DATA, DERIVED, catalogue, defaults
from kcost.cli import cli
from tests.conftest import ROOT

SESSIONS = [str(ROOT / "sample_sessions" / n) for n in ("coding-400k.yaml", "growing-chat.yaml")]
TRACE = str(ROOT / "tests" / "fixtures" / "traces" / "synthetic-400.jsonl")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def report(*args: str) -> dict:
    code, out, err = run("selfhost", *args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_k3_weights_at_mxfp4_are_about_one_and_a_half_terabytes() -> None:
    r = report(SESSIONS[0])
    # 2.78T parameters x (4 bits + one 8-bit scale per 32 weights) / 8 bits a byte
    assert Decimal(r["memory"]["bits_per_weight"]) == Decimal("4.25")
    weights = Decimal(r["memory"]["weights_bytes"])
    assert weights == Decimal("2.78e12") * Decimal("4.25") / 8 == Decimal("1476875000000")
    assert Decimal("1.40e12") <= weights <= Decimal("1.60e12")


def test_memory_floor_and_least_accelerators_by_hand() -> None:
    r = report(SESSIONS[0], "--concurrent", "100", "--context-tokens", "200000")
    m = r["memory"]
    # per context: 200,000 tokens x 13,824 B of MLA KV + one 449 MB KDA state; 100 of them
    state = 100 * (200_000 * 13_824 + 449_000_000)
    assert state == 321_380_000_000
    assert Decimal(m["state_bytes"]) == state
    assert Decimal(m["floor_bytes"]) == 1_476_875_000_000 + state == 1_798_255_000_000
    held = {h["accelerator"]: (h["least"], h["recommended"]) for h in m["by_accelerator"]}
    # 1,798.255 GB over 80, 141, 180 and 186 GB: 22.48 -> 23, 12.75 -> 13, 9.99 -> 10, 9.67 -> 10; the supernode is
    # 64 in whole 8-GPU domains, or one 72-GPU NVL72
    assert held == {"h100": (23, 64), "h200": (13, 64), "b200": (10, 64), "gb200-nvl72": (10, 72)}
    assert r["workload"]["concurrency_from"] == "given"


def test_without_state_the_weights_alone_set_the_counts() -> None:
    r = report(SESSIONS[0], "--concurrent", "1", "--context-tokens", "1")
    held = {h["accelerator"]: h["least"] for h in r["memory"]["by_accelerator"]}
    # 1,476.875 GB + 0.449 GB: 18.47 -> 19 H100, 10.48 -> 11 H200, 8.21 -> 9 B200
    assert (held["h100"], held["h200"], held["b200"]) == (19, 11, 9)


def test_the_api_bill_of_sessions_is_kcost_bill() -> None:
    code, out, err = run("bill", *SESSIONS, "--format", "json")
    assert code == 0, err
    total = json.loads(out)["runs"][0]["total"]
    w = report(*SESSIONS)["workload"]
    assert w["api_cost"] == total["total"]
    assert (w["input_tokens"], w["hit_tokens"], w["output_tokens"]) == (
        total["input_tokens"], total["hit_tokens"], total["output_tokens"])  # fmt: skip
    assert w["kind"] == "sessions" and w["units"] == 2


def test_the_api_bill_of_a_trace_is_kcost_trace() -> None:
    code, out, err = run("trace", TRACE, "--format", "json")
    assert code == 0, err
    point = json.loads(out)["curve"][0]
    w = report(TRACE)["workload"]
    assert w["kind"] == "trace" and w["units"] == point["requests"] == 400
    assert w["api_cost"] == point["cost"]
    assert (w["input_tokens"], w["hit_tokens"]) == (point["input_tokens"], point["hit_tokens"])
    assert w["span_seconds"] is not None and w["monthly_tokens"] is not None


@pytest.mark.parametrize("workload", [SESSIONS, [TRACE]], ids=["sessions", "trace"])
def test_break_even_is_where_both_lines_cross(workload: list[str]) -> None:
    r = report(*workload)
    w, fleet = r["workload"], r["fleet"]
    tokens = Decimal(w["input_tokens"] + w["output_tokens"])
    api_per_token = Decimal(w["api_cost"]) / tokens
    fleet_per_token = Decimal(r["fleet_per_mtok"]) / 1_000_000
    floor = Decimal(fleet["monthly_floor"])
    # 64 B200 at the middle of the reserved range ($2.25-$11.39: $6.82) for 730 hours
    assert floor == 64 * Decimal("6.82") * 730 == Decimal("318630.40")

    def api(v: Decimal) -> Decimal:
        return v * api_per_token

    def fleet_cost(v: Decimal) -> Decimal:
        return max(floor, v * fleet_per_token)

    even = Decimal(r["break_even_tokens"])
    assert abs(api(even) - fleet_cost(even)) < Decimal("0.01")  # the volume is whole tokens
    assert Decimal(r["break_even_cost"]) == floor
    assert api(even * Decimal("0.9")) < fleet_cost(even * Decimal("0.9"))
    assert api(even * Decimal("1.1")) > fleet_cost(even * Decimal("1.1"))
    for point in r["curve"]:  # the drawn lines are these same two
        v = Decimal(point["monthly_tokens"])
        assert abs(Decimal(point["api"]) - api(v)) <= Decimal("0.01")
        assert abs(Decimal(point["fleet"]) - fleet_cost(v)) <= Decimal("0.01")


def test_never_breaks_even_when_the_fleet_costs_more_a_token() -> None:
    r = report(SESSIONS[0], "--utilization", "0.0001", "--hourly", "900")
    assert r["break_even_tokens"] is None and r["break_even_cost"] is None
    assert any("never breaks even" in n for n in r["notes"])


def test_every_default_figure_has_a_source_and_a_date() -> None:
    files = [DATA / "accelerators.json", *(DATA / "architectures").glob("*.json")]
    seen = 0
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        stack = [data]
        while stack:
            node = stack.pop()
            if isinstance(node, dict) and "value" in node:
                assert node.get("source", "").strip(), (path.name, node)
                assert node.get("date"), (path.name, node)
                assert "estimate" in node, (path.name, node)
                seen += 1
            elif isinstance(node, dict):
                stack.extend(node.values())
    assert seen >= 40
    for name in catalogue()["accelerators"]:  # H100, H200 and B200 at least, each with both price ranges
        f = defaults("kimi-k3", name, "sglang-deepseek-v3-96xh100")
        assert {"memory_gb", "domain", "on_demand_low", "on_demand_high", "reserved_low", "reserved_high"} <= set(f)
    assert {"h100", "h200", "b200"} <= set(catalogue()["accelerators"])


def test_the_output_names_every_figure_source_date_and_which_are_estimates() -> None:
    r = report(SESSIONS[0])
    keys = {x["key"] for x in r["figures"]}
    assert keys == set(defaults("kimi-k3", "b200", "sglang-deepseek-v3-96xh100"))
    assert all(x["source"] and x["date"] for x in r["figures"])
    assert set(r["estimates"]) == {x["key"] for x in r["figures"] if x["estimate"]} >= {"active_params", "utilization"}
    code, out, _ = run("selfhost", SESSIONS[0], "--width", "200", "--detail")
    assert code == 0
    assert "estimates (not confirmed from a primary source): active_params" in out
    assert "https://lmsys.org/blog/2025-05-05-large-scale-ep" in out and "2025-05-05" in out


def test_a_flag_overrides_each_figure() -> None:
    shipped = defaults("kimi-k3", "b200", "sglang-deepseek-v3-96xh100")
    for key in [*shipped, *DERIVED]:
        if key not in BOUNDS:  # the deployment's accelerator's own figures come with the deployment
            continue
        least, most, whole, _ = BOUNDS[key]
        old = shipped[key].value if key in shipped else None
        value = (old * 2 if old is not None and old * 2 <= most else most) if key != "prefill_hit_share" else "0.5"
        if key in ("utilization",):
            value = "0.9"
        if key == "accelerators":
            value = "128"
        if whole:
            value = str(int(Decimal(value)))
        r = report(SESSIONS[0], "--set", f"{key}={value}")
        used = {x["key"]: x for x in r["figures"]}
        assert Decimal(used[key]["value"]) == Decimal(str(value)), key
        assert used[key]["overridden"] and used[key]["source"] == "given for this run", key


def test_the_config_overrides_a_figure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the config is found from the working directory up
    (tmp_path / "kcost.toml").write_text("[selfhost]\nutilization = 0.9\nhourly = '4'\n", encoding="utf-8")
    r = report(SESSIONS[0])
    used = {x["key"]: x["value"] for x in r["figures"]}
    assert (Decimal(used["utilization"]), Decimal(used["hourly"])) == (Decimal("0.9"), Decimal(4))
    assert Decimal(r["fleet"]["monthly_floor"]) == 64 * 4 * 730
    (tmp_path / "kcost.toml").write_text("[selfhost]\nutilization = -1\n", encoding="utf-8")
    code, _, err = run("selfhost", SESSIONS[0])
    assert code == 2 and err.count("\n") == 1 and "selfhost.utilization" in err and "kcost.toml" in err


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--set", "total_params=-1"], "--set total_params"),
        (["--set", "memory_gb=0"], "--set memory_gb"),
        (["--set", "hourly=1e9"], "--set hourly"),
        (["--set", "utilization=1.5"], "--set utilization"),
        (["--set", "experts=12.5"], "--set experts"),
        (["--set", "hours_per_month=nan"], "--set hours_per_month"),
        (["--set", "utilisation=0.5"], "utilisation"),
        (["--set", "utilization"], "--set"),
        (["--utilization", "0"], "--utilization"),
        (["--hourly", "-3"], "--hourly"),
        (["--accelerators", "4"], "--accelerators"),
        (["--concurrent", "0"], "--concurrent"),
        (["--context-tokens", "lots"], "--context-tokens"),
        (["--model", "kimi-k9"], "--model"),
        (["--accelerator", "tpu-v9"], "--accelerator"),
        (["--deployment", "mine"], "--deployment"),
        (["--set", "reserved_low=20"], "reserved_low"),
    ],
)
def test_a_bad_override_is_one_line_naming_it(args: list[str], named: str) -> None:
    code, out, err = run("selfhost", SESSIONS[0], *args)
    assert code == 2, err
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("kcost: error: ") and named in err


@pytest.mark.parametrize("fmt", ["table", "markdown", "html"])
def test_every_format_renders(fmt: str) -> None:
    code, out, err = run("selfhost", TRACE, "--format", fmt, "--width", "120", "--detail")
    assert code == 0, err
    assert "break-even" in out
    if fmt == "html":
        assert out.count("<svg") == 1 and "polyline" in out and "break-even" in out and "fleet (64 x b200)" in out


def test_schema_describes_the_json() -> None:
    from jsonschema import validate

    code, out, _ = run("schema", "selfhost")
    assert code == 0
    validate(report(TRACE), json.loads(out))


def test_the_answer_comes_first_in_a_few_lines_and_the_sources_on_request() -> None:
    """By default the answer (the break-even, the API's cost and the fleet's, the memory floor) in a few lines and
    no figure's source; with --detail every figure, its source cut to a line's worth (whole in the JSON)."""
    r = report(SESSIONS[0])
    code, out, _ = run("selfhost", SESSIONS[0])
    assert code == 0
    lines = out.splitlines()
    assert len(lines) <= 7 and all(len(line) <= 130 for line in lines), out
    assert lines[0] == ("Kimi K3 on 64 x b200 costs less than the API past 972.66B tokens a month ($318,630.40 a month "
                        "either way)")  # fmt: skip
    assert round(Decimal(r["break_even_tokens"]) / 10**7) == 97266
    assert Decimal(r["break_even_cost"]) == Decimal("318630.40")
    assert "http" not in out and "--detail" in lines[-1]
    code, detail, _ = run("selfhost", SESSIONS[0], "--detail")
    longest = max(r["figures"], key=lambda x: len(x["source"]))
    assert len(longest["source"]) > 150  # whole in the JSON ...
    (row,) = [line for line in detail.splitlines() if line.startswith(longest["key"] + " ")]
    assert longest["source"][:40] in row and longest["source"] not in row and row.endswith("…")  # ... cut here
    keys = {x["key"] for x in r["figures"]}
    assert max(len(line) for line in detail.splitlines() if line.split(" ")[0] in keys) < 170


def test_an_api_bill_of_months_is_set_beside_the_fleets_month_normalised(tmp_path: Path) -> None:
    """Logs whose calls span four months: the answer names the bill's span and sets the API's cost of a month at
    that pace (the JSON's workload_monthly_api) beside the fleet's month; the page's headline does too."""
    for log in ("claude-code/ccusage-chat-alpha.jsonl", "codex/ccusage-session-alpha.jsonl"):
        (tmp_path / Path(log).name).write_text((ROOT / "tests" / "fixtures" / log).read_text())
    r = report(str(tmp_path))
    assert r["workload"]["span_seconds"] > 100 * 86_400 and r["workload_monthly_api"] is not None
    code, out, _ = run("selfhost", str(tmp_path))
    assert code == 0
    months = r["workload"]["span_seconds"] / (730 * 3600)
    assert f"(2 sessions over {months:.1f} months of calls)" in out
    api, fleet = (Decimal(r[k]) for k in ("workload_monthly_api", "workload_monthly_fleet"))
    assert f"API ${api:,.2f} against the fleet's ${fleet:,.2f}" in out
    code, page, _ = run("selfhost", str(tmp_path), "--format", "html")
    assert f'API a month at its pace<b title="${r["workload_monthly_api"]}">${api:,.2f}</b>' in page
    assert 'class="figure">API bill<' not in page  # the bill of four months is not set beside a month


@pytest.mark.parametrize(
    ("args", "named"),
    [(["--accelerator", "h300"], "--accelerator"), (["--model", "kimi-k9"], "--model"),
     (["--deployment", "mine"], "--deployment")],
)  # fmt: skip
def test_an_unknown_option_is_refused_before_any_log_is_read(args: list[str], named: str, tmp_path: Path) -> None:
    """No log is read first: a path that is not there is never reached, and the one error names the option."""
    code, out, err = run("selfhost", str(tmp_path / "not-there.jsonl"), *args)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"kcost: error: {named}: ") and "not-there" not in err
