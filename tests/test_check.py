"""`kcost check` and `kcost diff` as CI runs them: budgets at their edges, exit codes, config files, reports."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import jsonschema
import pytest
import yaml
from click.testing import CliRunner, Result

from kcost.cli import cli
from tests.conftest import ROOT, SAMPLES

LESSON = str(SAMPLES / "coding-400k.yaml")  # k3: 50 turns of $0.1323456, $6.61728 in all
COLD = str(SAMPLES / "coding-400k-cold.yaml")
GOLDEN = Path(__file__).parent / "golden"


def kcost(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> Result:
    old = Path.cwd()
    if cwd:
        os.chdir(cwd)
    try:
        return CliRunner(env=env).invoke(cli, list(args))
    finally:
        os.chdir(old)


def check_json(*args: str, cwd: Path | None = None) -> tuple[int, dict]:  # type: ignore[type-arg]
    result = kcost("check", *args, "--format", "json", cwd=cwd)
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


@pytest.fixture(scope="module")
def ideal_bill(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A baseline: the lesson one turn shorter (49 x $0.1323456 = $6.4849344), so this run is one turn over."""
    folder = tmp_path_factory.mktemp("bills")
    shorter = folder / "coding-400k.yaml"
    shorter.write_text((SAMPLES / "coding-400k.yaml").read_text().replace("repeat: 50", "repeat: 49"))
    path = folder / "baseline.json"
    assert kcost("bill", str(shorter), "--format", "json", "-o", str(path)).exit_code == 0
    return str(path)


# the measured value sits exactly on each limit; a hair (the last decimal) below or above flips the verdict
EDGES = [
    ("--max-session-usd", "6.61728", "6.6172799", "max-session-usd", "6.61728"),
    ("--max-turn-usd", "0.1323456", "0.1323455", "max-turn-usd", "0.1323456"),
    ("--max-total-usd", "6.61728", "6.6172799", "max-total-usd", "6.61728"),
    # 399,872 / 404,000 = 0.98978217821...: passes at 0.9897821782, fails at 0.9897821783
    ("--min-hit-rate", "0.9897821782", "0.9897821783", "min-hit-rate", "0.9897821782"),
    # $6.61728 / 20.2M tokens = $0.32758811881... per 1M
    # (a measured ratio is shown rounded toward failing: up for a maximum, down for a minimum)
    ("--max-blended", "0.3275881189", "0.3275881188", "max-blended-usd-per-mtok", "0.3275881189"),
]


@pytest.mark.parametrize(("flag", "passes", "fails", "budget", "value"), EDGES)
def test_each_budget_passes_at_its_limit_and_fails_just_past_it(
    flag: str, passes: str, fails: str, budget: str, value: str
) -> None:
    code, ok = check_json(LESSON, flag, passes)
    assert code == 0 and ok["passed"] and ok["failures"] == 0
    code, bad = check_json(LESSON, flag, fails)
    assert code == 1 and not bad["passed"] and bad["failures"] == 1
    (failure,) = [r for r in bad["results"] if not r["passed"]]
    assert failure["budget"] == budget and failure["limit"] == fails
    assert failure["value"].startswith(value)
    session = "(all sessions)" if budget == "max-total-usd" else "lesson coding session (warm 400K prefix)"
    assert failure["session"] == session
    assert session in failure["message"] and budget in failure["message"] and fails in failure["message"]


@pytest.mark.parametrize(
    ("limit", "verdict"), [("0.1323456", 0), ("0.1323455", 1), ("2.0408163266%", 0), ("2.0408163265%", 1)]
)
def test_increase_over_the_baseline(ideal_bill: str, limit: str, verdict: int) -> None:
    """$6.61728 against $6.4849344: $0.1323456 more, 2.04081632653...% (matched by session name)."""
    code, report = check_json(LESSON, "--baseline", ideal_bill, "--max-increase", limit)
    assert code == verdict
    budgets = {r["budget"] for r in report["results"]}
    assert budgets == {"max-increase-pct" if limit.endswith("%") else "max-increase-usd"}
    assert {r["session"] for r in report["results"]} == {"lesson coding session (warm 400K prefix)", "(all sessions)"}


def test_a_turn_budget_names_the_turn() -> None:
    _, report = check_json(COLD, "--max-turn-usd", "0.50")
    (failure,) = [r for r in report["results"] if not r["passed"]]
    assert "turn 1 cost $1.212" in failure["message"]


@pytest.mark.parametrize(
    ("args", "files", "says"),
    [
        (["missing.yaml", "--max-session-usd", "1"], {}, "no such file"),
        (["empty", "--max-session-usd", "1"], {"empty/.keep": ""}, "no sessions found"),
        (["s.yaml", "--max-session-usd", "1"], {"s.yaml": "turns: [{new: -1}]\n"}, "turns[0].new"),
        (["s.yaml"], {"s.yaml": "turns: [{new: 5}]\n"}, "no budgets to check"),
        (["s.yaml", "--max-session-usd", "lots"], {"s.yaml": "turns: [{new: 5}]\n"}, "--max-session-usd"),
        (["s.yaml", "--max-increase", "10%"], {"s.yaml": "turns: [{new: 5}]\n"}, "needs a baseline"),
        (
            ["s.yaml", "--max-increase", "1", "--baseline", "nope.json"],
            {"s.yaml": "turns: [{new: 5}]\n"},
            "no such file",
        ),  # fmt: skip
        (
            ["s.yaml"],
            {"s.yaml": "turns: [{new: 5}]\n", "kcost.toml": "[budgets]\nmax-sesion-usd = 1\n"},
            "kcost.toml: budgets.max-sesion-usd: unknown field",
        ),  # fmt: skip
        (["s.yaml"], {"s.yaml": "turns: [{new: 5}]\n", "kcost.toml": "cach = 'k3'\n"}, "cach: unknown field"),
        (["s.yaml"], {"s.yaml": "turns: [{new: 5}]\n", "kcost.toml": "[budgets\n"}, "not valid TOML"),
        (
            ["s.yaml"],
            {"s.yaml": "turns: [{new: 5}]\n", "kcost.toml": "[budgets]\nmin-hit-rate = 1.5\n"},
            "min-hit-rate",
        ),  # fmt: skip
    ],
)
def test_a_check_that_cannot_run_exits_2(tmp_path: Path, args: list[str], files: dict[str, str], says: str) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    result = kcost("check", *args, cwd=tmp_path)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kcost: error:") and says in lines[0], result.stderr
    assert "Traceback" not in result.output


def test_budgets_from_kcost_toml_found_up_the_tree_and_flags_win(tmp_path: Path) -> None:
    (tmp_path / "kcost.toml").write_text('cache = "ideal"\n[budgets]\nmax-session-usd = 6.6\n')
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    code, report = check_json(LESSON, cwd=work)
    assert code == 0 and report["cache"]["name"] == "ideal"  # $6.60 under ideal: exactly the limit
    code, report = check_json(LESSON, "--cache", "k3", cwd=work)
    assert code == 1  # $6.61728 under k3
    code, report = check_json(LESSON, "--cache", "k3", "--max-session-usd", "7", cwd=work)
    assert code == 0 and report["budgets"]["max-session-usd"] == "7"


def test_budgets_from_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.kcost.budgets]\nmin-hit-rate = "0.99"\n')
    code, report = check_json(LESSON, cwd=tmp_path)
    assert code == 1 and report["results"][0]["budget"] == "min-hit-rate"
    (tmp_path / "pyproject.toml").write_text("[tool.kcost.budgets]\nmax-turn-usd = 1\nbogus = 2\n")
    result = kcost("check", LESSON, cwd=tmp_path)
    assert result.exit_code == 2 and "tool.kcost.budgets.bogus: unknown field" in result.stderr


def test_json_reports_validate_against_their_schemas(ideal_bill: str) -> None:
    schema = json.loads(kcost("schema", "check").stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    _, report = check_json(LESSON, COLD, "--max-turn-usd", "0.5", "--baseline", ideal_bill, "--max-increase", "5%")
    jsonschema.validate(report, schema)
    diff = json.loads(kcost("diff", ideal_bill, LESSON, "--format", "json").stdout)
    jsonschema.validate(diff, json.loads(kcost("schema", "diff").stdout))


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("KCOST_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def test_markdown_report_golden(ideal_bill: str, tmp_path: Path) -> None:
    shutil.copy(ideal_bill, tmp_path / "main-bill.json")
    shutil.copytree(SAMPLES, tmp_path / "sessions")
    result = kcost("check", "sessions", "--baseline", "main-bill.json", "--max-increase", "10%",
                   "--max-turn-usd", "0.40", "--format", "markdown", cwd=tmp_path)  # fmt: skip
    assert result.exit_code == 1
    _golden("check-markdown.md", result.stdout)


def test_junit_report_golden_and_shape(tmp_path: Path) -> None:
    shutil.copytree(SAMPLES, tmp_path / "sessions")
    result = kcost("check", "sessions", "--max-session-usd", "2.50", "--min-hit-rate", "80%", "--format", "junit",
                   cwd=tmp_path)  # fmt: skip
    assert result.exit_code == 1
    _golden("check-junit.xml", result.stdout)
    root = ET.fromstring(result.stdout)
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert len(suites) == 6 and all(s.get("name") for s in suites)
    cases = [c for s in suites for c in s.findall("testcase")]
    assert int(root.get("tests", "0")) == len(cases) == 12
    failures = [c for c in cases if c.find("failure") is not None]
    assert int(root.get("failures", "0")) == len(failures) == sum(int(s.get("failures", "0")) for s in suites)
    for case in cases:
        assert case.get("classname", "").startswith("kcost.") and case.get("name")
        assert {child.tag for child in case} <= {"failure"}
    for case in failures:
        failure = case.find("failure")
        assert failure is not None and failure.get("message") and failure.text
        assert case.get("file", "").startswith("sessions/")


def test_github_step_summary_and_annotations(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier steps\n")
    shutil.copytree(SAMPLES, tmp_path / "sessions")
    result = kcost("check", "sessions/coding-400k-cold.yaml", "--max-turn-usd", "0.40", cwd=tmp_path,
                   env={"GITHUB_STEP_SUMMARY": str(summary)})  # fmt: skip
    assert result.exit_code == 1
    text = summary.read_text()
    assert text.startswith("earlier steps\n") and "## ❌ kcost: 1 budget exceeded" in text
    errors = [line for line in result.stderr.splitlines() if line.startswith("::error ")]
    assert errors == [
        "::error file=sessions/coding-400k-cold.yaml,title=kcost max-turn-usd::lesson coding session (cold start): "
        "turn 1 cost $1.21 is over the max-turn-usd budget of $0.40"
    ]


def test_diff_of_two_bills_shows_new_and_removed_sessions(tmp_path: Path) -> None:
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    kcost("bill", LESSON, COLD, "--format", "json", "-o", str(old))
    kcost("bill", LESSON, str(SAMPLES / "growing-chat.yaml"), "--cache", "ideal", "--format", "json", "-o", str(new))
    result = json.loads(kcost("diff", str(old), str(new), "--format", "json").stdout)
    status = {row["session"]: row["status"] for row in result["sessions"]}
    assert status == {"growing agent conversation": "new", "lesson coding session (cold start)": "removed",
                      "lesson coding session (warm 400K prefix)": "changed"}  # fmt: skip
    (lesson,) = [r for r in result["sessions"] if r["status"] == "changed"]
    assert lesson["change"] == "-0.01728" and lesson["change_pct"] == "-0.26"
    table = kcost("diff", str(old), str(new)).stdout
    assert "removed" in table and "-$0.0173 (-0.3%)" in table


def test_diff_of_two_sessions_bills_them_first(tmp_path: Path) -> None:
    result = json.loads(kcost("diff", COLD, LESSON, "--format", "json").stdout)
    assert result["total"]["change"] == "-1.0796544"  # the cold start's extra first turn


def test_the_example_github_workflow_runs(tmp_path: Path) -> None:
    """Every command of examples/github-actions/kcost.yml, in a checkout-shaped folder (installs skipped)."""
    workflow = yaml.safe_load((ROOT / "examples" / "github-actions" / "kcost.yml").read_text())
    steps = [s for job in workflow["jobs"].values() for s in job["steps"] if "run" in s]
    repo, base = tmp_path / "repo", tmp_path / "base"
    for root in (repo, base):
        shutil.copytree(SAMPLES, root / "sessions")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for step in steps:
        for line in step["run"].splitlines():
            if not line.strip() or line.startswith(("pip install", "git ")):
                continue  # installing and checking out are the runner's business
            done = subprocess.run(line, shell=True, cwd=repo, env=env, capture_output=True, text=True)
            assert done.returncode == 0, (line, done.stdout, done.stderr)
    report = ET.parse(repo / "kcost-junit.xml").getroot()
    assert report.tag == "testsuites" and report.get("failures") == "0"


def test_the_pre_commit_hook_runs(tmp_path: Path) -> None:
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "kcost-check" and hook["language"] == "python" and hook["pass_filenames"]
    shutil.copytree(SAMPLES, tmp_path / "sessions")
    (tmp_path / "kcost.toml").write_text("[budgets]\nmax-session-usd = 1\n")
    import re

    staged = [f"sessions/{p.name}" for p in sorted(SAMPLES.iterdir()) if re.match(hook["files"], f"sessions/{p.name}")]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run([*hook["entry"].split(), *staged], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 1  # the lesson's sessions cost more than $1
    assert "max-session-usd" in done.stdout


def test_a_300_session_markdown_report_fits_a_pull_request_comment(tmp_path: Path) -> None:
    """Failing sessions are all named, changed ones come first, and the whole stays under 60,000 characters."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    for i in range(300):
        turns = 3 if i % 25 else 40  # every 25th session is long, and over its budget
        (folder / f"s{i:03}.yaml").write_text(
            f"name: a session with a fairly long descriptive name, number {i:03}\n"
            f"turns:\n  - {{new: {1_000 + i}, output: 200, repeat: {turns}}}\n"
        )
    baseline = tmp_path / "base.json"
    result = CliRunner().invoke(cli, ["bill", str(folder), "--format", "json", "-o", str(baseline)])
    assert result.exit_code == 0, result.output
    (folder / "s007.yaml").write_text("name: a changed session\nturns:\n  - {new: 9000, output: 200, repeat: 5}\n")
    result = CliRunner().invoke(cli, ["check", str(folder), "--max-session-usd", "0.10", "--baseline", str(baseline),
                                      "--format", "markdown"])  # fmt: skip
    assert result.exit_code == 1, result.output
    text = result.stdout
    assert len(text) < 60_000
    failing = [f"number {i:03}" for i in range(0, 300, 25)]
    assert all(name in text for name in failing)
    assert text.index("Budgets exceeded") < text.index("Against the baseline") < text.index("budgets held")
    assert "a changed session" in text.split("<details>")[0]  # the changed session before anything folded
    assert "left out to keep this comment under 60,000 characters" in text


def test_diff_only_changed_leaves_out_the_unchanged(tmp_path: Path) -> None:
    a = tmp_path / "a.json"
    CliRunner().invoke(cli, ["bill", str(SAMPLES), "--format", "json", "-o", str(a)])
    result = CliRunner().invoke(cli, ["diff", str(a), str(a), "--only-changed", "--format", "markdown"])
    assert result.exit_code == 0 and "unchanged sessions not shown" in result.stdout
    assert "| growing agent" not in result.stdout
