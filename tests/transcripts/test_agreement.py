"""Reported vs simulated cache hits on a Kimi CLI session whose usage follows what the public API was seen to
do (formats.md section 8): each step reads 256 x floor(previous prompt / 256) tokens from the cache, the
previous output is not counted. With 256-token blocks and no output caching the simulator should agree on
nearly every step."""

from __future__ import annotations

import json
from pathlib import Path

from kcost.billing.bills import bill
from kcost.cache.model import parse_cache_model
from kcost.pricing.prices import load_prices
from kcost.readers import read


def kimi_cli_session(folder: Path, steps: int) -> None:
    folder.mkdir()
    context = [{"role": "_system_prompt", "content": "You are Kimi CLI. " + "Follow the rules. " * 120}]
    wire: list[dict[str, object]] = [{"type": "metadata", "protocol_version": "1.10"}]
    prompt, t = 0, 1_776_000_000.0
    for step in range(steps):
        context.append({"role": "user", "content": f"step {step}: " + "explain the next function please " * 12})
        wire.append({"timestamp": t, "message": {"type": "StepBegin", "payload": {"n": 1}}})
        cached = prompt // 256 * 256  # what the API read from cache: the previous prompt, in 256-token chunks
        prompt += 700 + 37 * (step % 5)  # this step's prompt: the previous one, its reply and the new message
        usage = {"input_other": prompt - cached, "output": 150, "input_cache_read": cached, "input_cache_creation": 0}
        wire.append({"timestamp": t + 1, "message": {"type": "StatusUpdate", "payload": {"token_usage": usage}}})
        context.append({"role": "assistant", "content": [{"type": "think", "think": "Reading it. " * 20},
                                                         {"type": "text", "text": "It parses. " * 30}]})  # fmt: skip
        t += 30
    (folder / "context.jsonl").write_text("".join(json.dumps(r) + "\n" for r in context))
    (folder / "wire.jsonl").write_text("".join(json.dumps(r) + "\n" for r in wire))


def test_simulated_hits_agree_with_reported_ones(tmp_path: Path) -> None:
    kimi_cli_session(tmp_path / "session", steps=40)
    (session,) = read(str(tmp_path / "session"))
    assert session.sized == (40, 0)  # every prompt sized from its logged usage
    result = bill(session, cache=parse_cache_model("k3:hash=256"), prices=load_prices())
    assert result.agreement is not None and result.agreement.turns == 40
    # they differ only where a prompt ends exactly on a 256-token boundary (the last token is recomputed)
    assert result.agreement.rate >= 0.95
    # in reported mode the bill is the log's own figures, token for token
    reported = bill(session, cache=parse_cache_model("k3:hash=256"), prices=load_prices(), usage="reported")
    assert sum(t.hit_tokens for t in reported.turns) == sum(u.cached for u in session.reported if u)
    assert sum(t.input_tokens for t in reported.turns) == sum(u.prompt for u in session.reported if u)
