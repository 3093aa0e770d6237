"""The small trips of a first minute, each the way a user of git or ccusage expects: token counts with suffixes
everywhere, errors that name the option given, a model as a positional argument, "did you mean" for commands."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from kcost.errors import InputError
from kcost.model.bounds import parse_tokens
from tests.conftest import SAMPLES

LESSON = str(SAMPLES / "coding-400k.yaml")


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("400000", 400_000),
        ("400_000", 400_000),
        ("400,000", 400_000),
        ("400k", 400_000),
        ("400K", 400_000),
        ("1.5M", 1_500_000),
        ("1M", 1_000_000),
        ("1B", 10**9),
        (" 4k ", 4_000),
        ("0", 0),
    ],  # fmt: skip
)
def test_a_token_count_as_people_write_one(text: str, tokens: int) -> None:
    assert parse_tokens(text) == tokens


@pytest.mark.parametrize("text", ["400kk", "1.2345k", "-5", "2B", "4 000", "1e6", "", "k"])
def test_a_bad_token_count_is_an_error(text: str) -> None:
    with pytest.raises(InputError):
        parse_tokens(text)


def test_quote_takes_suffixes_and_gives_the_same_quote() -> None:
    plain = run("quote", "--prefix", "400000", "--new", "4000", "--out", "1000", "--format", "json")
    short = run("quote", "--prefix", "400k", "--new", "4k", "--out", "1k", "--format", "json")
    assert plain == short and plain[0] == 0


def test_trace_long_from_takes_suffixes() -> None:
    trace = str(SAMPLES.parent / "tests" / "fixtures" / "traces" / "synthetic-400.jsonl")
    assert run("trace", trace, "--long-from", "2048", "--format", "json") == run(
        "trace", trace, "--long-from", "2.048k", "--format", "json"
    )


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("quote", "--prefix", "400kk", "--new", "1"), "--prefix"),
        (("compare", LESSON, "--on", "claude-opus-9"), "--on"),
        (("compare", LESSON, "--on", ""), "--on"),
        (("compare", LESSON, "--on", "logged"), "--on"),
        (("bill", LESSON, "--model", ""), "--model"),
    ],  # fmt: skip
)
def test_an_error_names_the_option_given(args: tuple[str, ...], named: str) -> None:
    code, out = run(*args)
    assert code == 2 and out.startswith(f"kcost: error: {named}: ") and out.count("\n") == 1, out


def test_the_nearest_ids_are_each_named_once() -> None:
    _, out = run("compare", LESSON, "--on", "claude-opus-9")
    ids = re.search(r"nearest priced ids: ([^;]+);", out)
    assert ids is not None
    named = [i.strip() for i in ids.group(1).split(",")]
    assert len(named) == len(set(named)) > 0


def test_a_model_is_a_positional_argument_of_prices() -> None:
    assert run("prices", "kimi-k3") == run("prices", "--model", "kimi-k3")
    code, out = run("prices", "kimi-k3", "--model", "kimi-k2")
    assert code == 2 and "two models given" in out


@pytest.mark.parametrize(("typed", "meant"), [("bil", "bill"), ("explian", "explain"), ("chek", "check")])
def test_a_mistyped_command_gets_a_did_you_mean(typed: str, meant: str) -> None:
    code, out = run(typed)
    assert code == 2 and f"did you mean {meant!r}" in out and out.count("\n") == 1


def test_an_unknown_command_with_no_near_one_names_the_help() -> None:
    code, out = run("zzzz")
    assert code == 2 and "no such command 'zzzz'" in out and "did you mean" not in out


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("README.md", "# kcost\n\nkcost tells you: what a session costs.\n"),
        ("pyproject.toml", "[project]\nname = 'x'\n"),
        ("notes.txt", "hello\n"),
        ("data.json", '{"a": 1}\n'),
    ],  # fmt: skip
)
def test_a_file_that_is_no_session_is_said_to_be_so(tmp_path, name: str, text: str) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / name
    path.write_text(text)
    code, out = run("bill", str(path))
    assert (
        code == 2
        and out
        == f"kcost: error: {path}: no session: not a format kcost reads (turn specs (.yaml, "
        ".json, .jsonl) or an agent's log; see --input-format)\n"
    )


def test_a_turn_spec_in_a_file_of_any_name_is_still_read(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "spec.txt"
    path.write_text("turns:\n  - {new: 5000, output: 100}\n")
    code, out = run("bill", str(path), "--format", "json")
    assert code == 0 and '"input_tokens": 5000' in out


def test_routine_notes_only_with_verbose() -> None:
    """A Claude Code log's lines that carry no usage are counted in the JSON, and shown to a person only with -v."""
    log = str(SAMPLES.parent / "tests" / "fixtures" / "claude-code" / "spotter-short.jsonl")
    for fmt in ("table", "markdown", "html"):
        _, quiet = run("bill", log, "--format", fmt)
        _, loud = run("bill", log, "--format", fmt, "--verbose")
        assert "non-message line(s) skipped" not in quiet
        assert "6 non-message line(s) skipped" in loud
        assert "system prompt and tools not in the log" in quiet  # what is not routine stays
    _, data = run("bill", log, "--format", "json")
    assert "6 non-message line(s) skipped" in data
