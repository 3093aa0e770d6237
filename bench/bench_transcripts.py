"""Benchmark: reading real session formats. Prints its figures; asserts nothing about time.

1. 200 legacy Kimi CLI sessions (context.jsonl + wire.jsonl, shaped like the shipped samples: thinking, tool
   calls, tool results, a StatusUpdate with token_usage per step), billed under `k3` in one run, beside the time
   to merely parse the same files line by line with the json module.
2. One transcript that grows to about 1M tokens: every request re-sends the whole conversation, yet each
   distinct message is rendered and counted once. The script counts the token-counting calls and compares them
   with the messages the requests carry in all.
3. A Kimi API log of `--requests` request/response pairs, each request carrying the conversation so far (the
   log grows in the square of its requests), billed by `kcost bill` as a whole process beside this process
   parsing every line with the json module; and the bill's peak memory beside the log's size (a log held once,
   its records one at a time; up to a16baa8: 3.8 times the log, and 1.8 times the time).

Run: python bench/bench_transcripts.py [--sessions 200] [--turns 12] [--requests 400]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kcost.billing.bills import bill
from kcost.cache.model import CacheModel, Kind
from kcost.pricing.prices import load_prices
from kcost.prompts.tokenizer import Estimate
from kcost.readers import read_all


def write_session(folder: Path, turns: int, seed: int, words: int = 60) -> None:
    """A Kimi CLI session: per turn a user prompt, an assistant step with reasoning and a tool call, the tool's
    result, and a final assistant reply; one StatusUpdate per step, as the CLI writes them."""
    folder.mkdir(parents=True)
    context = [{"role": "_system_prompt", "content": f"You are Kimi CLI, session {seed}. " + "Rules. " * 200}]
    wire = [{"type": "metadata", "protocol_version": "1.10"}]
    t = 1_776_000_000.0 + seed * 10_000
    prompt = 400
    for turn in range(turns):
        body = " ".join(f"w{seed}_{turn}_{i}" for i in range(words))
        context.append({"role": "user", "content": f"Task {turn}: {body}"})
        wire.append({"timestamp": t, "message": {"type": "TurnBegin", "payload": {"user_input": f"Task {turn}"}}})
        for step, reply in enumerate((
            {"role": "assistant", "content": [{"type": "think", "think": f"Plan {body}", "encrypted": None}],
             "tool_calls": [{"type": "function", "id": f"Shell:{turn}", "function": {
                 "name": "Shell", "arguments": json.dumps({"command": f"cat file_{turn}.py"})}}]},
            {"role": "assistant", "content": [{"type": "think", "think": "Done.", "encrypted": None},
                                              {"type": "text", "text": f"Result: {body}"}]},
        ), start=1):  # fmt: skip
            t += 5
            wire.append({"timestamp": t, "message": {"type": "StepBegin", "payload": {"n": step}}})
            cached = prompt // 256 * 256
            prompt += words * 3
            usage = {"input_other": prompt - cached, "output": 120, "input_cache_read": cached,
                     "input_cache_creation": 0}  # fmt: skip
            context.append({"role": "_usage", "token_count": prompt})
            context.append(reply)
            wire.append({"timestamp": t + 1, "message": {"type": "StatusUpdate", "payload": {
                "token_usage": usage, "message_id": f"chatcmpl-{seed}-{turn}-{step}"}}})  # fmt: skip
            if step == 1:
                context.append({"role": "tool", "content": f"file_{turn}.py: " + body * 2,
                                "tool_call_id": f"Shell:{turn}"})  # fmt: skip
        wire.append({"timestamp": t + 2, "message": {"type": "TurnEnd", "payload": {}}})
    (folder / "context.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in context))
    (folder / "wire.jsonl").write_text("".join(json.dumps(r) + "\n" for r in wire))


def write_api_log(path: Path, requests: int) -> None:
    """Request/response pairs as a proxy logs them: each request the whole conversation so far."""
    rng = random.Random(3)
    messages: list[dict[str, str]] = [{"role": "system", "content": "You are Kimi. " * 200}]
    prompt = 3000
    with path.open("w", encoding="utf-8") as out:
        for i in range(requests):
            messages.append({"role": "user", "content": f"question {i} " + "word " * rng.randint(20, 200)})
            reply = {"role": "assistant", "content": "answer " * rng.randint(20, 100), "reasoning_content": "think "}
            usage = {"prompt_tokens": prompt, "completion_tokens": 150, "cached_tokens": max(0, prompt - 400)}
            response = {"id": f"c{i}", "object": "chat.completion", "created": 1_768_994_256 + 30 * i,
                        "model": "kimi-k3", "choices": [{"index": 0, "message": reply}], "usage": usage}  # fmt: skip
            out.write(json.dumps({"request": {"model": "kimi-k3", "messages": messages}, "response": response}))
            out.write("\n")
            messages.append(reply)
            prompt += 400


def process(args: list[str]) -> tuple[float, int]:
    """(seconds, peak resident set in MB) of one kcost process."""
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "kcost", *args], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, args
    return time.perf_counter() - start, usage.ru_maxrss // 1024


class CountingEstimate(Estimate):
    def __init__(self) -> None:
        self.calls = 0
        self.chars = 0

    def count(self, text: str) -> int:
        self.calls += 1
        self.chars += len(text)
        return super().count(text)


def timed(fn):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--turns", type=int, default=12)
    parser.add_argument("--requests", type=int, default=400)
    args = parser.parse_args()
    prices, model = load_prices(), CacheModel(Kind.K3)
    with tempfile.TemporaryDirectory() as tmp:
        # the kcost process of part 3 first, while this process is small: a child's peak counts its parent's pages
        log = Path(tmp) / "api" / "requests.jsonl"
        log.parent.mkdir()
        write_api_log(log, args.requests)
        t_api, peak = process(["bill", str(log), "--format", "json", "-o", os.devnull])
        root = Path(tmp) / "sessions"
        for i in range(args.sessions):
            write_session(root / f"wd{i % 7}" / f"session-{i:04d}", args.turns, i)
        files = sorted(root.rglob("*.jsonl"))
        size = sum(f.stat().st_size for f in files)

        def parse_only() -> int:
            return sum(1 for f in files for line in f.read_text().splitlines() if json.loads(line) is not None)

        def kcost() -> list[object]:
            sessions = read_all([str(root)]).sessions
            return [bill(s, cache=model, prices=prices) for s in sessions]

        t_parse, lines = timed(parse_only)
        t_kcost, bills = timed(kcost)
        calls = sum(len(b.turns) for b in bills)  # type: ignore[attr-defined]
        print(f"{args.sessions} Kimi CLI sessions: {len(files)} files, {lines:,} lines, {size / 1e6:.1f} MB, "
              f"{calls:,} model calls billed")  # fmt: skip
        print(f"{'':<44}{'seconds':>10}")
        print(f"{'  json.loads of every line (the floor)':<44}{t_parse:>10.3f}")
        print(f"{'  kcost: read, render, count, simulate, bill':<44}{t_kcost:>10.3f}")
        print(f"{'  ratio':<44}{t_kcost / t_parse:>9.1f}x")
        print()

        big = Path(tmp) / "big" / "session-1m"
        write_session(big, turns=1100, seed=9, words=100)
        counter = CountingEstimate()
        t_big, found = timed(lambda: read_all([str(big)], counter=counter))
        session = found.sessions[0]
        t_bill, result = timed(lambda: bill(session, cache=model, prices=prices))
        carried = sum(r.keep > 0 for r in session.requests)
        last = result.turns[-1].input_tokens
        total = sum(t.input_tokens for t in result.turns)
        messages = sum(1 + 2 * i for i in range(len(session.requests)))  # a rough count of messages re-sent
        print(f"one session growing to {last:,} tokens over {len(session.requests):,} requests "
              f"({total:,} prompt tokens sent in all, {carried:,} requests re-send a prefix)")  # fmt: skip
        print(f"  token-counting calls: {counter.calls:,} for {counter.chars / 1e6:.1f} M characters "
              f"(the requests carry about {messages:,} messages in all)")  # fmt: skip
        print(f"  read + render + count: {t_big:.3f} s; simulate + bill: {t_bill:.3f} s")
        print()

        mb = log.stat().st_size / 2**20
        t_lines, _ = timed(lambda: sum(1 for line in log.read_text().splitlines() if json.loads(line)))
        print(f"a Kimi API log of {args.requests:,} requests, each re-sending the conversation ({mb:,.0f} MB)")
        print(f"{'  json.loads of every line (the floor)':<44}{t_lines:>10.3f} s")
        print(f"{'  kcost bill LOG --format json':<44}{t_api:>10.3f} s  {t_api / t_lines:.1f}x the floor")
        print(f"{'  its peak memory':<44}{peak:>10,} MB  {peak / mb:.2f}x the log")


if __name__ == "__main__":
    main()
