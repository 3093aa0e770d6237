"""Providers are modules: what kcost knows of each one lives in its module under kcost/providers (and its price
file), the generic code names none, and a new one is picked up from the registry with no other edit."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from kcost.analysis.compare import rule_for
from kcost.cache import model as cache_model
from kcost.cache.model import parse_cache_model
from kcost.cli import cli
from kcost.pricing import providers
from kcost.pricing.providers.base import CacheRule, Provider, UsageFields
from kcost.readers import usage
from tests.conftest import ROOT, SAMPLES

# A string constant (not a docstring) that names a provider in a module outside kcost/providers. Prose (help
# text, messages: anything with a space) may mention a provider; only bare names are logic.
ALLOWED: set[tuple[str, str]] = {  # (a reader takes the wire scheme its format logs from kcost.pricing.providers.wire)
    # an agent named for its provider (Gemini CLI): its format's name, home and record type are the agent's
    *(("kcost/readers/agents/gemini_cli.py", t) for t in ("gemini", "gemini-cli")),
    *(("kcost/readers/registry.py", t)
      for t in ("gemini-cli", "kcost.readers.agents.gemini_cli:geminicli", "gemini_cli_home", ".gemini/tmp")),
    ("kcost/readers/usage.py", "gemini-cli"),
    # Cline's and Roo Code's own names for the API provider a task used (its `apiProvider`, `apiProtocol`): what
    # their `tokensIn` and `cacheWrites` mean depends on it, as the agents' provider handlers fill them
    *(("kcost/readers/agents/cline.py", t) for t in ("anthropic", "deepseek", "openai-native", "gemini", "openai")),
    ("kcost/readers/agents/roo_code.py", "anthropic"),
    # Antigravity keeps its conversations under the Gemini CLI's folder (`~/.gemini/antigravity-cli`)
    *(("kcost/readers/registry.py", t) for t in ("~/.gemini/antigravity-cli", "~/.gemini/antigravity-ide",
                                                  "~/.gemini/antigravity")),
}  # fmt: skip


def markers() -> set[str]:
    """What names a provider: its id, its rule's `--cache` name, the model families its rule singles out and its
    default models (K3's `k3` is kcost's own design, which the generic code is built around)."""
    found: set[str] = set()
    for p in providers.providers():
        found |= {p.id, p.cache, *p.compare, *(part for part, _ in p.rule.minimums)}
        found |= {name for v in p.variants for name in (v.cache, *v.models)}
    return found - {cache_model.Kind.K3.value}


def docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def named(tree: ast.AST, where: str) -> list[str]:
    """The bare string constants in `tree` that name a provider, each with its line."""
    names, skip, found = markers(), docstrings(tree), []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str) or id(node) in skip:
            continue
        text = node.value.lower()
        if re.search(r"\s", text) or (where, text) in ALLOWED:
            continue
        hits = sorted(m for m in names if re.search(rf"(?<![a-z0-9]){re.escape(m)}", text))
        if hits:
            found.append(f"{where}:{node.lineno}: {node.value!r} names {', '.join(hits)}")
    return found


def test_no_module_outside_the_providers_names_one() -> None:
    found = []
    for path in sorted((ROOT / "kcost").rglob("*.py")):
        where = path.relative_to(ROOT).as_posix()
        if not where.startswith("kcost/pricing/providers/"):
            found += named(ast.parse(path.read_text()), where)
    assert not found, "\n".join(found)


def test_the_check_sees_a_provider_named_in_logic() -> None:
    """The scan would catch the deny-list and the minimums it replaced, and lets a docstring or prose be."""
    code = (
        '"""Rules of OpenAI and DeepSeek."""\n'
        'if kind not in ("openai", "deepseek", "gemini"):\n    pass\n'
        'MINIMUMS = (("anthropic", "haiku-4-5", 4096), ("google", "gemini-2.", 2048))\n'
        'DEFAULT = "gpt-5.1"\nHELP = "priced on deepseek-chat by default"\n'
    )
    lines = sorted(found.split(": ", 1)[0] for found in named(ast.parse(code), "x.py"))
    assert lines == ["x.py:2"] * 3 + ["x.py:4"] * 4 + ["x.py:5"]


def test_every_providers_rule_drives_its_cache_model() -> None:
    rules = [(p, name, rule) for p in providers.providers()
             for name, rule in ((p.cache, p.rule), *((v.cache, v.rule) for v in p.variants))]  # fmt: skip
    for p, cache, rule in rules:
        model = parse_cache_model(cache)
        assert model.kind.rule is rule and model.info().name == cache
        assert model.output is rule.output
        assert model.anywhere is rule.anywhere and model.checkpointed is not rule.anywhere, p.id
        assert model.bills_writes is rule.bills_writes and model.source == rule.source, p.id
        assert model.ttl == rule.lifetimes[0] and model.min_tokens == rule.least and model.block == rule.step, p.id
        if rule.placement:
            assert model.checkpoints == rule.placement
        for part, least in rule.minimums:
            assert rule_for(p.id, f"x-{part}-y").min_tokens == least, (p.id, part)
    for p in providers.providers():
        for v in p.variants:
            for part in v.models:
                assert rule_for(p.id, f"{part}-x").kind.value == v.cache, (p.id, part)


def test_every_provider_has_its_price_file_and_no_file_is_nobodys() -> None:
    data = ROOT / "kcost" / "pricing" / "data"
    for p in providers.providers():
        assert json.loads((data / p.prices).read_text())["provider"] == p.id
    files = {f.name for f in data.glob("*.json")} - {"index.json"}
    assert files == {p.prices for p in providers.providers()}


def test_the_registry_and_help_load_no_provider_module() -> None:
    code = (
        "import sys\nimport kcost.pricing.providers\nfrom kcost.cli import main\n"
        "sys.argv = ['kcost', '--help']\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
        "print([m for m in sys.modules if m.startswith('kcost.pricing.providers.')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip().splitlines()[-1] == "[]"


# ---- a new provider: one module, one registry line, one price file -------------------------------------------

ACME = Provider(
    id="acme",
    name="Acme",
    cache="acme",
    rule=CacheRule(
        anywhere=True,
        step=32,
        least=256,
        minimums=(("acme-mini", 512),),
        lifetimes=(600.0,),
        bills_writes=False,
        source="https://acme.example/docs/caching",
    ),
    usage=UsageFields(scheme="acme", layout="flat", prompt=("in", "hit"), cached=("hit",), output="out"),
    compare=("acme-1",),
    prices="acme.json",
)
ACME_PRICES = {
    "provider": "acme",
    "name": "Acme list prices",
    "currency": "USD",
    "pricing_urls": ["https://acme.example/pricing"],
    "snapshot": "a test's",
    "models": [
        {"id": model, "name": None, "match": {"equals": model},
         "prices": [{"starts": None, "as_of": "2026-11-30", "source": "https://acme.example/pricing",
                     "input_cache_miss": "1", "input_cache_hit": "0.1", "output": "4"}]}
        for model in ("acme-1", "acme-mini")
    ],
}  # fmt: skip


def _forget() -> None:
    from kcost.pricing import prices

    providers.providers.cache_clear()
    usage.schemes.cache_clear()
    cache_model._provider_kind.cache_clear()
    prices._shipped.cache_clear()


@pytest.fixture
def acme(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from kcost.pricing import prices

    for path in prices.DATA.glob("*.json"):
        shutil.copy(path, tmp_path / path.name)
    (tmp_path / "acme.json").write_text(json.dumps(ACME_PRICES))
    module = types.ModuleType("acme_provider")
    module.PROVIDER = ACME  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "acme_provider", module)
    monkeypatch.setattr(providers, "MODULES", (*providers.MODULES, "acme_provider"))
    monkeypatch.setattr(prices, "DATA", tmp_path)
    _forget()
    yield
    monkeypatch.undo()
    _forget()


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.usefixtures("acme")
def test_a_new_provider_is_compared_billed_and_priced_with_no_other_edit() -> None:
    sample = str(SAMPLES / "growing-chat.yaml")
    code, out, err = run("compare", sample, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    rows = doc["sessions"][0]["rows"]
    assert [r["model"] for r in rows][-1] == "acme-1" and rows[-1]["cache"] == "acme:min=256,ttl=600,output=off"
    caches = {c["name"]: c for c in doc["caches"]}
    assert caches["acme"]["source"] == "https://acme.example/docs/caching"
    assert caches["acme"]["checkpoints"] == "anywhere, in steps of 32 tokens"

    code, out, err = run("compare", sample, "--on", "acme-mini", "--format", "json")
    assert code == 0 and json.loads(out)["sessions"][0]["rows"][0]["cache"].startswith("acme:min=512,"), err

    code, out, err = run("bill", sample, "--cache", "acme:ttl=1h", "--model", "acme-1", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["runs"][0]["cache"]["label"] == "acme:min=256,ttl=3600,output=off"

    code, out, _ = run("prices", "--format", "json")
    assert code == 0 and [p["provider"] for p in json.loads(out)["providers"]][-1] == "acme"

    code, _, err = run("bill", sample, "--cache", "nope")
    assert code == 2 and "deepseek, deepseek-v4, gemini, acme" in err

    parsed = usage.parse_usage({"in": 10, "hit": 5, "out": 3}, "acme")
    assert parsed is not None and (parsed.prompt, parsed.cached, parsed.output) == (15, 5, 3)
