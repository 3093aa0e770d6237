"""`kcost explain`'s fixes, priced by re-simulation: each fix's saving against two bills computed here on their own
(the session as written, and the session written with the fix made), the combined saving against the bill with
every fix made, and bounds that hold on any generated session."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from hypothesis import given, settings

from kcost import api
from kcost.analysis.explain import explain
from kcost.api.settings import resolve
from kcost.cli import cli
from kcost.errors import InputError
from kcost.readers.specs.models import SessionSpec
from kcost.readers.specs.turnspec import build
from kcost.results.explain import Explanation
from tests.conftest import build_or_reject, project_logs, turn_specs

TTL = 300  # the default cache's lifetime
PREFIX = 6_000  # the system prompt and tools


def spec(*, volatile: bool = True, strip: bool = True, pings: bool = False) -> dict[str, Any]:
    """A session with a system prompt that changes on turns 3 and 7 (a timestamp in it), reasoning stripped on
    turn 5, and a 15-minute idle gap before turn 9 (after a turn with no output). The keyword arguments make
    each fix: `volatile=False` keeps the prefix stable, `strip=False` passes the reasoning back, `pings=True`
    sends keep-alive calls in the gap (each the whole prompt, one new token, one output token, every 270 s)."""
    turns: list[dict[str, Any]] = [
        {"new": 800, "output": 1200, "reasoning": 600},
        {"new": 3000, "output": 900, "reasoning": 400},
        {"new": 700, "output": 1000, "reasoning": 500, **({"edit_at": 0} if volatile else {})},
        {"new": 2500, "output": 800, "reasoning": 300},
        {"new": 900, "output": 700, "reasoning": 200, **({"strip_reasoning": True} if strip else {})},
        {"new": 1200, "output": 600, "reasoning": 100},
        {"new": 400, "output": 900, "reasoning": 300, **({"edit_at": 0} if volatile else {})},
        {"new": 600, "output": 0},
    ]
    if pings:  # three keep-alive calls at 270, 540 and 810 s, then the turn at 900 s
        turns += [{"idle": 270, "keep": "LAST", "new": 1, "output": 1, "previous_output": "none"}] * 3
        turns.append({"idle": 90, "keep": "LAST", "new": 1500, "output": 500, "previous_output": "none"})
    else:
        turns.append({"idle": 900, "new": 1500, "output": 500})
    turns.append({"new": 800, "output": 400})
    return {"name": "fixes", "prefix": {"tokens": PREFIX}, "turns": turns}


def session_of(data: dict[str, Any]) -> Any:
    """The session of `data`; a `keep: LAST` keeps the prompt of the last turn before the keep-alive calls."""
    turns = data["turns"]
    if any(t.get("keep") == "LAST" for t in turns):
        first = next(i for i, t in enumerate(turns) if t.get("keep") == "LAST")
        before = build(SessionSpec.model_validate({**data, "turns": turns[:first]}), source="t", name="t")
        length = before.records[-1].request.keep + sum(s.length for s in before.records[-1].request.append)
        turns = [{**t, "keep": length} if t.get("keep") == "LAST" else t for t in turns]
    return build(SessionSpec.model_validate({**data, "turns": turns}), source="t", name="t")


def total(data: dict[str, Any], cache: str = "k3") -> Decimal:
    return api.bill(session_of(data), cache=cache).summary.total


def explained(data: dict[str, Any]) -> Explanation:
    s = resolve()
    return api.explain([session_of(data)], s)[0]


def test_each_fix_saves_the_difference_of_two_bills() -> None:
    e = explained(spec())
    original = total(spec())
    assert e.total == original
    by = {f.fix: f for f in e.fixes}
    assert set(by) == {"stable-prefix", "pass-reasoning", "idle"}

    # each saves the difference of the two bills, up to what its causes' misses cost: the prefix edited on turn 3
    # also leaves turn 5's stripped reasoning no checkpoint of turns 1 and 2 to fall back on, a miss of turn 5's
    assert by["stable-prefix"].total == total(spec(volatile=False))
    assert by["stable-prefix"].saving == min(original - total(spec(volatile=False)), by["stable-prefix"].misses) > 0
    assert by["stable-prefix"].turns == [3, 7]

    assert by["pass-reasoning"].total == total(spec(strip=False))
    assert by["pass-reasoning"].saving == min(original - total(spec(strip=False)), by["pass-reasoning"].misses) > 0
    assert by["pass-reasoning"].turns == [5]

    ways = {w.way: w.total for w in by["idle"].ways or ()}
    assert ways == {"keep-alive": total(spec(pings=True)), "1-hour writes": total(spec(), cache="k3:ttl=3600")}
    assert by["idle"].total == min(ways.values())
    assert by["idle"].saving == min(original - min(ways.values()), by["idle"].misses) > 0
    assert by["idle"].turns == [9]


def test_the_combined_saving_is_the_bill_with_every_fix_made() -> None:
    e = explained(spec())
    idle = next(f for f in e.fixes if f.fix == "idle")
    if idle.way == "keep-alive":
        every = total(spec(volatile=False, strip=False, pings=True))
    else:
        every = total(spec(volatile=False, strip=False), cache="k3:ttl=3600")
    assert e.fixed_total == every
    assert e.avoidable == e.total - every
    assert e.avoidable != sum(f.saving for f in e.fixes)  # fixes overlap: not the sum of their savings
    assert e.floor <= e.fixed_total


def test_unavoidable_causes_are_never_avoidable() -> None:
    e = explained(spec(volatile=False, strip=False, pings=True))
    # no fix applies to the session written with every fix made (the keep-alive calls keep the cache warm)
    assert e.avoidable == 0 and e.fixed_total == e.total
    causes = {r.cause for r in e.unavoidable}
    assert "cold start" in causes and "previous output not cached" in causes
    assert not any(f.saving > 0 for f in e.fixes)


def bounded(e: Explanation) -> None:
    """What an explanation may claim: each fix at most what its causes' misses cost (and none offered whose causes
    cost nothing), every fix together at least the best one alone, and no more than the total less the floor."""
    for f in e.fixes:
        assert f.misses > 0, f"{e.session}: {f.fix} offered, its causes cost nothing"
        assert f.saving <= f.misses, f"{e.session}: {f.fix} saves {f.saving}, its causes' misses cost {f.misses}"
    best = max((f.saving for f in e.fixes), default=Decimal(0))
    assert e.avoidable >= best, f"{e.session}: every fix together saves {e.avoidable}, one alone {best}"
    assert 0 <= e.avoidable <= e.total - e.floor, e.session
    if not any(f.saving > 0 for f in e.fixes):
        assert e.avoidable == 0 and e.fixed_total == e.total
    assert {r.cause for r in e.unavoidable}.isdisjoint(c for f in e.fixes for c in f.causes)


@settings(max_examples=150, deadline=None)
@given(generated=turn_specs(max_turns=6, scale=800))
def test_fixes_are_bounded_on_any_session(generated: SessionSpec) -> None:
    session = build_or_reject(generated)
    for cache in ("k3", "k3:ttl=60", "k3:mtp=on", "anthropic", "openai-5.6", "deepseek-v4", "ideal"):
        bounded(api.explain([session], resolve(caches=[cache]))[0])


def test_a_three_turn_session_with_its_reasoning_stripped_is_bounded() -> None:
    """Idle gaps closed by 1-hour writes: the floor (the ideal cache) bills no writes, so it stays a floor."""
    e = explained({"name": "three", "turns": [
        {"new": 575, "output": 0, "strip_reasoning": True},
        {"new": 272, "idle": 500, "output": 0, "strip_reasoning": True},
        {"new": 24, "idle": 500, "output": 0, "strip_reasoning": True},
    ]})  # fmt: skip
    bounded(e)


def test_fixes_are_bounded_on_every_log_the_project_ships() -> None:
    """Every log of the project (fixtures, samples, the shared samples where they are), explained by default."""
    checked = 0
    for path in project_logs():
        try:
            sessions = api.sessions([str(path)], resolve())
        except InputError:
            continue  # not a log (a trace, a price file) or a bad one, as its own tests say
        for e in api.explain(sessions, resolve()):
            bounded(e)
            checked += 1
    assert checked >= 40


def test_explain_answers_in_the_first_15_lines(tmp_path: Path) -> None:
    turns = []
    for n in range(150):
        turn: dict[str, Any] = {"new": 400 + 37 * (n % 11), "output": 300, "reasoning": 100}
        if n % 40 == 39:
            turn["idle"] = "10m"
        if n == 70:
            turn["edit_at"] = 100  # the prefix edited once
        turns.append(turn)
    path = tmp_path / "long.json"
    path.write_text(json.dumps({"name": "long", "prefix": {"tokens": 20_000}, "turns": turns}))
    result = CliRunner().invoke(cli, ["explain", str(path), "--width", "100"])
    assert result.exit_code == 0, result.output
    data = json.loads(CliRunner().invoke(cli, ["explain", str(path), "--format", "json"]).stdout)[0]
    head = result.stdout.splitlines()[:15]
    best = max(data["fixes"], key=lambda f: Decimal(f["saving"]))
    from kcost.render.display import money

    assert any(f"avoidable {money(Decimal(data['avoidable']))}" in line for line in head), head
    assert any(line.startswith(best["fix"]) and money(Decimal(best["saving"])) in line for line in head), head
    assert any(line.startswith("unavoidable:") for line in head), head
    assert len(result.stdout.splitlines()) < 20  # the per-turn detail waits for --detail
    detailed = CliRunner().invoke(cli, ["explain", str(path), "--detail", "--width", "100"]).stdout
    assert len(detailed.splitlines()) > 150


def test_top_keeps_the_fixes_that_save_most(tmp_path: Path) -> None:
    runner = CliRunner()
    path = tmp_path / "s.json"
    path.write_text(json.dumps(spec()))
    full = json.loads(runner.invoke(cli, ["explain", str(path), "--format", "json"]).stdout)[0]
    top = json.loads(runner.invoke(cli, ["explain", str(path), "--format", "json", "--top", "1"]).stdout)[0]
    shown = runner.invoke(cli, ["explain", str(path), "--top", "1", "--width", "120"]).stdout
    assert top["fixes"] == full["fixes"][:1] and len(full["fixes"]) == 3
    assert top["avoidable"] == full["avoidable"]  # every fix together, whatever is shown
    assert full["fixes"][0]["fix"] in shown and full["fixes"][1]["fix"] not in shown.split("unavoidable")[0]


def test_fixes_need_prompts_to_simulate() -> None:
    fixtures = Path(__file__).parent / "fixtures" / "claude-code"
    runner = CliRunner()
    logged = json.loads(runner.invoke(cli, ["explain", str(fixtures / "ccusage-chat-alpha.jsonl"), "--format",
                                            "json"]).stdout)[0]  # fmt: skip
    assert logged["unpriced"].startswith("billed as the log reports") and logged["avoidable"] == "0"
    assert logged["fixes"] == [] and logged["fixed_total"] == logged["total"]
    reported = runner.invoke(cli, ["explain", str(fixtures / "spotter-short.jsonl"), "--usage", "reported"]).stdout
    assert "fixes not priced: billed as the log reports: fixes are priced on simulated usage" in reported


def test_explain_takes_a_rebill() -> None:
    billed: list[Any] = []

    def rebill(session: Any, cache: Any) -> Any:
        billed.append(session)
        return api.bill(session, cache=cache)

    session = session_of(spec())
    e = explain(api.bill(session, cache="k3"), session, resolve().cache, rebill)
    assert e.unpriced is None and e.fixed_total == explained(spec()).fixed_total
    assert len(billed) == 1 + 1 + 2 + 1 + 1  # stable-prefix, pass-reasoning, idle both ways, together, the floor


def test_a_compaction_that_keeps_the_prefix_saves_it() -> None:
    """Turn 4 compacts the conversation and sends the 6,000-token system prompt again rewritten, with a 300-token
    summary after it: all new to the cache. Compacted behind the prefix kept as it was, the turn hits it (the
    session written that way, billed on its own)."""

    def compacted(rewritten: bool) -> dict[str, Any]:
        cut = {"keep": 0, "new": PREFIX + 300} if rewritten else {"keep": PREFIX, "new": 300}
        return {"name": "c", "prefix": {"tokens": PREFIX}, "turns": [
            {"new": 800, "output": 400}, {"new": 900, "output": 300}, {"new": 500, "output": 200},
            {**cut, "output": 100}, {"new": 400, "output": 200}]}  # fmt: skip

    e = explained(compacted(True))
    (fix,) = [f for f in e.fixes if f.fix == "compaction"]
    assert fix.turns == [4] and fix.causes == ["conversation cut short"]
    assert fix.total == total(compacted(False)) and fix.saving == total(compacted(True)) - fix.total > 0
    behind = explained(compacted(False))  # already behind the prefix: nothing to fix
    assert not [f for f in behind.fixes if f.fix == "compaction"]


def test_explain_bills_the_session_under_1_hour_writes_once(monkeypatch: Any) -> None:
    """The idle fix's 1-hour way is the session under 1-hour writes, which `hour_writes` bills too: one bill
    serves both, and the figures are the same as billing it twice."""
    settings_ = resolve()
    (session,) = api.sessions([str(Path(__file__).parent.parent / "sample_sessions" / "growing-chat.yaml")],
                              settings_)  # fmt: skip
    before = api.explain([session], settings_)[0]
    made: list[tuple[int, str]] = []
    bill_one = api._bill_one

    def counted(s: Any, st: Any, prices: Any, cache: Any) -> Any:
        made.append((id(s), cache.label))
        return bill_one(s, st, prices, cache)

    monkeypatch.setattr(api, "_bill_one", counted)
    after = api.explain([session], settings_)[0]
    assert after == before and after.hour_writes is not None
    assert len(made) == len(set(made)), made  # no session billed twice under one cache model
    assert sum(label.endswith("ttl=3600,output=off") for _, label in made) == 1, made
