"""Benchmark: kcost beside ccusage on the same Claude Code logs. Prints its figures; asserts nothing about time.

Generates Claude Code project logs deterministically (seeded), laid out as `<dir>/projects/<project>/<uuid>.jsonl`
the way Claude Code writes them: one assistant line per content block (thinking, text, tool_use) repeating the
response's `message.id`, `requestId` and usage; `tool_result` user lines (source code, command output) with a
`toolUseResult` copy; progress, system and file-history-snapshot lines; usage that grows with what each request
adds on top of an unlogged ~15,000-token system prompt and tools, cache reads of the previous prompt, misses after
an expired 5-minute cache, and auto-compaction near the context limit. For each size (MB in all) it times, as whole
processes, the median of `--runs` runs after one warm-up:

  a. ccusage: `ccusage claude session --json --offline` with CLAUDE_CONFIG_DIR=<dir> (the peer; version 20.0.24);
  b. kcost with the logged usage: `kcost bill <dir>/projects --usage reported --format json -o /dev/null`;
  c. kcost by default (prompts rebuilt, token counts estimated, the K3 cache simulated): `--format json`;
  d. the floor: this process reading every line with json.loads (a reference, not a target).

Targets: (b) within 1.5x of ccusage, (c) within 2x, each peaking at no more memory than ccusage (the median of
the runs' largest process, workers included: the kernel's maxrss, each command started by a small runner of its
own, `measure.py`, so that its peak does not start at this process's). The warm-up run also cross-checks the totals:
requests after de-duplication by (message.id, requestId), prompt and output tokens, from the logs, ccusage and
kcost (b).

ccusage is looked up as `--ccusage PATH`, else $CCUSAGE, else `ccusage` on PATH. To install it outside the repo:
    mkdir -p "$PEERS" && cd "$PEERS" && npm install ccusage@20.0.24 @ccusage/ccusage-linux-x64@20.0.24
    export CCUSAGE="$PEERS/node_modules/.bin/ccusage"      # PEERS: any folder outside the repo

Run: python bench/bench_claude_logs.py [--sizes 15,150] [--runs 3] [--ccusage PATH] [--keep DIR] [--seed 7]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import shutil
import stat
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

VERSION = "2.1.38"
SYSTEM_TOKENS = 15_000  # system prompt + tool schemas: sent with every request, never logged
SHARED_CACHED = 11_515  # the part of it already cached across sessions (the first read in spotter-short.jsonl)
CHARS_PER_TOKEN = 3.5
COMPACT_AT = 160_000  # Claude Code auto-compacts a little before the 200K context window
MODELS = ("claude-sonnet-4-5-20250929", "claude-opus-4-6")
B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
TARGETS = {"reported": 1.5, "default": 2.0}
ROOT = Path(__file__).resolve().parent.parent  # kcost runs from here, so `python -m kcost` is the repo's code
sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import measured  # noqa: E402

WORDS = (
    "the", "a", "user", "request", "config", "handler", "session", "token", "cache", "prefix", "module", "function",
    "test", "error", "value", "file", "path", "return", "parse", "build", "update", "check", "state", "result",
    "server", "client", "query", "index", "record", "field", "schema", "timeout", "retry", "load", "write", "read",
    "list", "map", "key", "time", "count", "total", "price", "model", "stream", "buffer", "event", "queue",
    "worker", "job", "task",
)  # fmt: skip
PROMPTS = (
    "the tests in {f} fail after the last change, can you look?",
    "add a --{w} option to the CLI and document it",
    "refactor {f} so the {w} logic lives in one place",
    "why is {w} slow on large inputs? profile it and fix the hot spot",
    "write tests for the {w} edge cases in {f}",
    "rename {w} to {w2} everywhere and update the docs",
    "the server crashes on startup with a KeyError on '{w}'",
    "review {f} and tell me what you would change",
)


def b62(rng: random.Random, n: int) -> str:
    return "".join(rng.choices(B62, k=n))


def stamp(t: float) -> str:
    """ISO 8601 with milliseconds and a Z, as Claude Code writes it."""
    ms = int(round(t * 1000))
    return datetime.fromtimestamp(ms // 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def sentence(rng: random.Random, n: int) -> str:
    words = rng.choices(WORDS, k=n)
    return " ".join(words).capitalize() + "."


def prose(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        s = sentence(rng, rng.randint(6, 18))
        out.append(s)
        size += len(s) + 1
    return " ".join(out)


class Corpus:
    """A pool of source-code-like lines from the seed, sliced into tool results so generation stays fast."""

    def __init__(self, rng: random.Random, lines: int = 6_000) -> None:
        out = []
        indent = 0
        for _ in range(lines):
            w, w2, w3 = rng.choice(WORDS), rng.choice(WORDS), rng.choice(WORDS)
            kind = rng.random()
            if kind < 0.12:
                indent = 0
                out.append(f"def {w}_{w2}({w3}: str, {w2}: int = {rng.randint(0, 99)}) -> dict[str, int]:")
                indent = 4
            elif kind < 0.18:
                indent = 0
                out.append(f"class {w.capitalize()}{w2.capitalize()}:")
                indent = 4
            elif kind < 0.30:
                out.append(" " * indent + f'"""{sentence(rng, rng.randint(5, 12))}"""')
            elif kind < 0.42:
                out.append(" " * indent + f"if {w} is None or len({w2}) > {rng.randint(1, 512)}:")
                out.append(" " * (indent + 4) + f'raise ValueError(f"bad {w}: {{{w2}!r}}")')
            elif kind < 0.50:
                out.append("")
            elif kind < 0.60:
                out.append(" " * indent + f"for {w} in self.{w2}s:")
                out.append(" " * (indent + 4) + f"{w3}[{w}.key] += {w}.{w2}  # {sentence(rng, 4)}")
            else:
                out.append(" " * indent + f"{w}_{w2} = self.{w3}.get({w!r}, {rng.randint(0, 9999)})")
        self.lines = out

    def code(self, rng: random.Random, chars: int, numbered: bool = False) -> tuple[str, int]:
        start = rng.randrange(len(self.lines) - 400)
        out: list[str] = []
        size = 0
        i = start
        while size < chars and i < len(self.lines):
            line = f"{i - start + 1:>6}\u2192{self.lines[i]}" if numbered else self.lines[i]
            out.append(line)
            size += len(line) + 1
            i += 1
        return "\n".join(out), len(out)


@dataclass
class Writer:
    """One session file: the parentUuid chain, the clock and the usage arithmetic of one conversation."""

    rng: random.Random
    corpus: Corpus
    cwd: str
    session_id: str
    model: str
    ttl: str  # "5m" or "1h": where cache writes go, and when the cache expires
    t: float
    lines: list[str] = field(default_factory=list)
    parent: str | None = None
    prompt: int = 0  # the previous request's prompt tokens (input + cache writes + cache reads): what it cached
    carried: int = 0  # what the next prompt starts from: that prompt and the reply
    added: float = 0.0  # characters appended to the conversation since that request
    last_request_t: float = 0.0
    requests: int = 0

    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def tick(self, low: float, high: float) -> None:
        self.t += self.rng.uniform(low, high)

    def common(self, kind: str) -> dict[str, object]:
        return {"parentUuid": self.parent, "isSidechain": False, "userType": "external", "cwd": self.cwd,
                "sessionId": self.session_id, "version": VERSION, "gitBranch": "main", "type": kind}  # fmt: skip

    def emit(self, record: dict[str, object], chain: bool = True) -> str:
        self.lines.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
        uid = record["uuid"]
        assert isinstance(uid, str)
        if chain:
            self.parent = uid
        return uid

    def snapshot(self, message_id: str) -> None:
        self.lines.append(json.dumps({"type": "file-history-snapshot", "messageId": message_id, "snapshot": {
            "messageId": message_id, "trackedFileBackups": {}, "timestamp": stamp(self.t)},
            "isSnapshotUpdate": False}, separators=(",", ":")))  # fmt: skip

    def progress(self, event: str, name: str, command: str, tool_id: str) -> None:
        rec = self.common("progress")
        rec.update({"data": {"type": "hook_progress", "hookEvent": event, "hookName": name, "command": command},
                    "parentToolUseID": tool_id, "toolUseID": tool_id, "uuid": self.uid(),
                    "timestamp": stamp(self.t)})  # fmt: skip
        self.emit(rec)

    def system(self, subtype: str, content: str, **extra: object) -> None:
        rec = self.common("system")
        rec.update({"subtype": subtype, "content": content, "level": "info", "timestamp": stamp(self.t),
                    "uuid": self.uid(), "isMeta": False, **extra})  # fmt: skip
        self.emit(rec)

    def user_prompt(self, text: str, **extra: object) -> None:
        uid = self.uid()
        self.snapshot(uid)
        rec = self.common("user")
        rec.update({"message": {"role": "user", "content": text}, "uuid": uid, "timestamp": stamp(self.t),
                    "thinkingMetadata": {"maxThinkingTokens": 31999}, "todos": [],
                    "permissionMode": "acceptEdits", **extra})  # fmt: skip
        self.emit(rec)
        self.added += len(text)

    def usage(self, output: int) -> dict[str, object]:
        """This request's usage: the previous prompt, plus what was added since (~3.5 chars a token), read back
        from the cache unless the cache expired; the rest written to it."""
        prompt = (self.carried or SYSTEM_TOKENS) + int(self.added / CHARS_PER_TOKEN)
        expired = self.ttl == "5m" and self.t - self.last_request_t > 300
        cached = SHARED_CACHED if self.prompt == 0 or expired else self.prompt
        fresh = self.rng.randint(1, 9)
        read = min(cached, prompt - fresh)
        write = prompt - fresh - read
        self.prompt, self.carried = prompt, prompt + output  # the reply is part of the next prompt
        self.added = 0.0
        self.last_request_t = self.t
        self.requests += 1
        return {"input_tokens": fresh, "cache_creation_input_tokens": write, "cache_read_input_tokens": read,
                "cache_creation": {"ephemeral_5m_input_tokens": write if self.ttl == "5m" else 0,
                                   "ephemeral_1h_input_tokens": write if self.ttl == "1h" else 0},
                "output_tokens": output, "service_tier": "standard"}  # fmt: skip

    def response(self, blocks: list[dict[str, object]], stop: str) -> list[tuple[str, dict[str, object]]]:
        """One API response written as one line per content block; earlier lines carry the partial output count
        of the stream's start, the last line the final one. Returns (line uuid, block) of each tool_use."""
        chars = sum(len(json.dumps(b)) for b in blocks)
        final = max(12, int(chars / CHARS_PER_TOKEN) + self.rng.randint(0, 40))
        usage = self.usage(final)
        message_id = "msg_01" + b62(self.rng, 22)
        request_id = "req_011C" + b62(self.rng, 16)
        tools = []
        for i, block in enumerate(blocks):
            last = i == len(blocks) - 1
            rec = self.common("assistant")
            del rec["type"]
            rec["message"] = {"model": self.model, "id": message_id, "type": "message", "role": "assistant",
                              "content": [block], "stop_reason": stop if last else None, "stop_sequence": None,
                              "usage": usage if last else {**usage, "output_tokens": min(final, 13)}}  # fmt: skip
            rec.update({"requestId": request_id, "type": "assistant", "uuid": self.uid(), "timestamp": stamp(self.t)})
            uid = self.emit(rec)
            if block["type"] == "tool_use":
                tools.append((uid, block))
            self.tick(0.2, 2.5)
        return tools

    def tool_results(self, tools: list[tuple[str, dict[str, object]]]) -> None:
        for _, block in tools:
            self.progress("PreToolUse", f"PreToolUse:{block['name']}", "~/.claude/hooks/guard.sh", str(block["id"]))
        for tool_uid, block in tools:
            self.tick(0.1, 30.0 if self.rng.random() < 0.2 else 3.0)
            content, copy = self.result_of(block)
            rec = self.common("user")
            rec["parentUuid"] = tool_uid  # each result hangs off its own tool_use line, as in spotter-short.jsonl
            rec.update({"message": {"role": "user", "content": [{"tool_use_id": block["id"], "type": "tool_result",
                                                                  "content": content}]},
                        "uuid": self.uid(), "timestamp": stamp(self.t), "toolUseResult": copy,
                        "sourceToolAssistantUUID": tool_uid})  # fmt: skip
            self.emit(rec)
            self.added += len(content)

    def result_of(self, block: dict[str, object]) -> tuple[str, object]:
        rng = self.rng
        args = block["input"]
        assert isinstance(args, dict)
        size = int(rng.lognormvariate(7.3, 0.8))  # median ~1,500 characters, often several thousand
        size = max(200, min(size, 24_000))
        name = block["name"]
        if name == "Read":
            text, lines = self.corpus.code(rng, size, numbered=True)
            plain = "\n".join(line.split("\u2192", 1)[1] for line in text.splitlines())
            return text, {"type": "text", "file": {"filePath": args["file_path"], "content": plain,
                                                   "numLines": lines, "startLine": 1, "totalLines": lines}}  # fmt: skip
        if name == "Bash":
            if rng.random() < 0.5:
                out, _ = self.corpus.code(rng, size)
            else:
                out = "\n".join(f"tests/test_{rng.choice(WORDS)}.py::test_{rng.choice(WORDS)}_{i} PASSED"
                                for i in range(max(3, size // 50)))  # fmt: skip
            return out, {"stdout": out, "stderr": "", "interrupted": False, "isImage": False}
        if name == "Grep":
            files = [f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py" for _ in range(max(1, size // 120))]
            text = f"Found {len(files)} files\n" + "\n".join(files)
            return text, {"mode": "files_with_matches", "filenames": files, "numFiles": len(files)}
        if name == "Glob":
            files = [f"{self.cwd}/src/{rng.choice(WORDS)}_{i}.py" for i in range(max(1, size // 200))]
            return "\n".join(files), {"filenames": files, "durationMs": rng.randint(5, 90), "numFiles": len(files),
                                      "truncated": False}  # fmt: skip
        # Edit
        original, _ = self.corpus.code(rng, size)
        snippet, _ = self.corpus.code(rng, 600, numbered=True)
        text = f"The file {args['file_path']} has been updated. Here's the result of running `cat -n` on a " \
               f"snippet of the edited file:\n{snippet}"  # fmt: skip
        return text, {"filePath": args["file_path"], "oldString": args["old_string"],
                      "newString": args["new_string"], "originalFile": original, "structuredPatch": [
                          {"oldStart": 10, "oldLines": 3, "newStart": 10, "newLines": 4,
                           "lines": [f" {args['old_string']}", f"+{args['new_string']}"]}],
                      "userModified": False, "replaceAll": False}  # fmt: skip

    def tool_use(self) -> dict[str, object]:
        rng = self.rng
        path = f"{self.cwd}/src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py"
        name = rng.choices(("Read", "Bash", "Grep", "Glob", "Edit"), weights=(40, 25, 12, 5, 18))[0]
        if name == "Read":
            args: dict[str, object] = {"file_path": path}
        elif name == "Bash":
            args = {"command": rng.choice(("python -m pytest -q tests/", f"git diff {path}", f"cat {path}",
                                           "ruff check .", f"grep -rn {rng.choice(WORDS)} src/")),
                    "description": sentence(rng, 4)}  # fmt: skip
        elif name == "Grep":
            args = {"pattern": f"def {rng.choice(WORDS)}", "path": self.cwd, "output_mode": "files_with_matches"}
        elif name == "Glob":
            args = {"pattern": f"**/*{rng.choice(WORDS)}*.py", "path": self.cwd}
        else:
            old, _ = self.corpus.code(rng, rng.randint(60, 600))
            new, _ = self.corpus.code(rng, rng.randint(60, 900))
            args = {"file_path": path, "old_string": old, "new_string": new, "replace_all": False}
        return {"type": "tool_use", "id": "toolu_01" + b62(rng, 22), "name": name, "input": args,
                "caller": {"type": "direct"}}  # fmt: skip

    def compact(self) -> None:
        """Auto-compaction: a boundary with no parent, then the summary as a user message; the next prompt is the
        system prompt plus the summary."""
        self.tick(20, 60)
        pre, logical = self.carried, self.parent
        self.parent = None
        self.system("compact_boundary", "Conversation compacted", logicalParentUuid=logical,
                    compactMetadata={"trigger": "auto", "preTokens": pre})  # fmt: skip
        summary = "This session is being continued from a previous conversation. Summary: " + prose(self.rng, 6_000)
        self.prompt = self.carried = 0
        self.added = 0.0
        rec = self.common("user")
        rec.update({"message": {"role": "user", "content": summary}, "isVisibleInTranscriptOnly": True,
                    "isCompactSummary": True, "uuid": self.uid(), "timestamp": stamp(self.t)})  # fmt: skip
        self.emit(rec)
        self.added += len(summary)


def write_session(path: Path, cwd: str, session_id: str, requests: int, t0: float, rng: random.Random,
                  corpus: Corpus) -> tuple[int, int]:  # fmt: skip
    """A session of `requests` API calls in a few user turns, each turn an agent loop of tool calls. Returns
    (lines, requests)."""
    model = rng.choice(MODELS)
    w = Writer(rng, corpus, cwd, session_id, model, ttl="1h" if model == MODELS[1] else "5m", t=t0)
    tool_id = "startup-" + w.uid()
    w.snapshot(w.uid())
    for hook in ("~/.claude/hooks/tmux-waiting.sh clear", "bd prime"):
        w.progress("SessionStart", "SessionStart:startup", hook, tool_id)
    while w.requests < requests:
        w.tick(8, 480)  # the user reads, thinks, types: seconds to minutes
        if rng.random() < 0.1:
            w.system("local_command", "<command-name>/model</command-name>\n<command-args></command-args>")
        f = f"src/{rng.choice(WORDS)}.py"
        w.user_prompt(rng.choice(PROMPTS).format(f=f, w=rng.choice(WORDS), w2=rng.choice(WORDS)) + " "
                      + (prose(rng, rng.randint(50, 1500)) if rng.random() < 0.4 else ""))  # fmt: skip
        w.tick(1.5, 4)
        steps = min(requests - w.requests, rng.randint(3, 40))
        for step in range(steps):
            blocks: list[dict[str, object]] = []
            if rng.random() < 0.6:
                sig = base64.b64encode(rng.randbytes(rng.randint(200, 700))).decode()
                blocks.append({"type": "thinking", "thinking": prose(rng, rng.randint(100, 2500)), "signature": sig})
            last = step == steps - 1
            if last or rng.random() < 0.5:
                blocks.append({"type": "text", "text": prose(rng, rng.randint(40, 1800 if last else 300))})
            if not last:
                blocks.extend(w.tool_use() for _ in range(rng.choices((1, 2, 3), weights=(75, 18, 7))[0]))
            tools = w.response(blocks, "end_turn" if last else "tool_use")  # its output joins the next prompt
            if tools:
                w.tool_results(tools)
            w.tick(0.5, 6)
            if w.carried > COMPACT_AT:
                w.compact()
        if rng.random() < 0.5:
            w.system("turn_duration", "", durationMs=int((w.t - t0) * 1000) % 900_000)
    path.write_text("\n".join(w.lines) + "\n", encoding="utf-8")
    return len(w.lines), w.requests


def generate(root: Path, megabytes: float, seed: int) -> None:
    """Sessions of 20-400 requests in a handful of projects, until the files hold `megabytes` MB in all."""
    rng = random.Random(seed)
    corpus = Corpus(rng)
    projects = [f"/home/dev/projects/{name}" for name in ("spotter", "billing-api", "web-ui", "infra", "ml-lab")]
    total = 0
    t0 = datetime(2026, 2, 1, 9, 0, tzinfo=timezone.utc).timestamp()
    i = 0
    while total < megabytes * 1e6:
        cwd = projects[i % len(projects)] if i < len(projects) else rng.choice(projects)
        folder = root / "projects" / cwd.replace("/", "-")
        folder.mkdir(parents=True, exist_ok=True)
        session_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        path = folder / f"{session_id}.jsonl"
        t0 += rng.uniform(600, 86_400)
        requests = int(20 * 20 ** rng.random())  # log-uniform over 20-400: many short sessions, a few long ones
        write_session(path, cwd, session_id, requests, t0, rng, corpus)
        total += path.stat().st_size
        i += 1


def prepared(keep: Path | None, tmp: str, megabytes: float, seed: int) -> Path:
    """The folder holding `projects/` for this size: generated in the temporary folder, or cached under --keep."""
    if keep is None:
        root = Path(tmp) / f"{megabytes:g}mb"
        generate(root, megabytes, seed)
        return root
    root = keep / f"{megabytes:g}mb-seed{seed}"
    done = root / ".complete"
    if not done.exists():
        shutil.rmtree(root, ignore_errors=True)
        generate(root, megabytes, seed)
        done.write_text("generated by bench/bench_claude_logs.py\n")
    return root


@dataclass
class Logs:
    files: int
    size: int
    lines: int
    requests: int  # after de-duplication by (message.id, requestId), keeping the largest usage
    prompt: int
    output: int


def survey(root: Path) -> Logs:
    files = sorted((root / "projects").rglob("*.jsonl"))
    lines = 0
    best: dict[tuple[str, str], tuple[int, int]] = {}
    for f in files:
        with f.open("rb") as fh:
            for line in fh:
                lines += 1
                rec = json.loads(line)
                if rec.get("type") != "assistant":
                    continue
                msg = rec["message"]
                u = msg["usage"]
                prompt = u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]
                key = (msg["id"], rec["requestId"])
                best[key] = max(best.get(key, (0, 0)), (prompt, u["output_tokens"]), key=sum)
    return Logs(files=len(files), size=sum(f.stat().st_size for f in files), lines=lines, requests=len(best),
                prompt=sum(p for p, _ in best.values()), output=sum(o for _, o in best.values()))  # fmt: skip


def parse_floor(root: Path) -> int:
    n = 0
    for f in sorted((root / "projects").rglob("*.jsonl")):
        with f.open("rb") as fh:
            for line in fh:
                json.loads(line)
                n += 1
    return n


def find_ccusage(option: str | None) -> str | None:
    for candidate in (option, os.environ.get("CCUSAGE")):
        if candidate:
            if not (Path(candidate).is_file() and os.access(candidate, os.X_OK)):
                sys.exit(f"ccusage not found or not executable: {candidate}")
            return candidate
    return shutil.which("ccusage")


@dataclass
class Timing:
    label: str
    seconds: float | None = None
    error: str | None = None
    output: str = ""
    peak: float = 0.0  # MB: the median of the runs' largest process (the kernel's maxrss, workers included)


def failure(done: subprocess.CompletedProcess[str]) -> str:
    """The exit code and the last line of stderr (a traceback's last line names the error)."""
    lines = [line for line in (done.stderr or "").splitlines() if line.strip()]
    return f"exit {done.returncode}: {lines[-1].strip() if lines else '(no stderr)'}"


def run(label: str, cmd: list[str], runs: int, env: dict[str, str] | None = None,
        check_cmd: list[str] | None = None) -> Timing:  # fmt: skip
    """One warm-up (output kept for the cross-check; `check_cmd` when the timed command writes elsewhere), then the
    median wall time and peak memory of `runs` runs with stdout to /dev/null. Any non-zero exit is reported, not
    timed."""
    warm = subprocess.run(check_cmd or cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    if warm.returncode != 0:
        return Timing(label, error=failure(warm))
    times, peaks = [], []
    for _ in range(runs):
        # started by a runner of its own: forked from this process, which holds the logs it generated and parsed,
        # a command's peak would start at this process's size (`measure.py`)
        one = measured(cmd, env=env, cwd=ROOT)
        if one.code != 0:
            return Timing(label, error=failure(subprocess.CompletedProcess(cmd, one.code, "", one.stderr)))
        times.append(one.seconds)
        peaks.append(one.peak_mb)
    return Timing(label, seconds=statistics.median(times), output=warm.stdout, peak=statistics.median(peaks))


def totals_ccusage(text: str) -> tuple[int, int, int]:
    data = json.loads(text)
    t = data["totals"]
    sessions = data["sessions"]
    return len(sessions), t["inputTokens"] + t["cacheCreationTokens"] + t["cacheReadTokens"], t["outputTokens"]


def totals_kcost(text: str) -> tuple[int, int, int, int]:
    data = json.loads(text)
    run_ = data["runs"][0]
    t = run_["total"]
    return len(run_["sessions"]), t["turns"], t["input_tokens"], t["output_tokens"]


def bench_size(root: Path, megabytes: float, runs: int, ccusage: str | None) -> None:
    logs = survey(root)
    projects = root / "projects"
    print(f"{megabytes:g} MB asked: {logs.size / 1e6:.1f} MB in {logs.files} files, {logs.lines:,} lines, "
          f"{logs.requests:,} requests after de-duplication by (message.id, requestId), "
          f"{logs.prompt:,} prompt / {logs.output:,} output tokens")  # fmt: skip

    floor_times = []
    parse_floor(root)  # warm the page cache like the others' warm-up
    for _ in range(runs):
        start = time.perf_counter()
        parse_floor(root)
        floor_times.append(time.perf_counter() - start)
    floor = statistics.median(floor_times)

    kcost = [sys.executable, "-m", "kcost", "bill", str(projects)]
    reported = run("kcost bill --usage reported --format json -o /dev/null",
                   [*kcost, "--usage", "reported", "--format", "json", "-o", os.devnull], runs,
                   check_cmd=[*kcost, "--usage", "reported", "--format", "json"])  # fmt: skip
    default = run("kcost bill --format json (default mode)", [*kcost, "--format", "json"], runs)
    if not stat.S_ISCHR(os.stat(os.devnull).st_mode):
        print(f"  !! {os.devnull} is no longer a character device after `-o {os.devnull}`")
    peer: Timing | None = None
    if ccusage:
        env = {**os.environ, "CLAUDE_CONFIG_DIR": str(root)}
        peer = run("ccusage claude session --json --offline",
                   [ccusage, "claude", "session", "--json", "--offline"], runs, env=env)  # fmt: skip

    print(f"  {'median of ' + str(runs) + ', after one warm-up':<56}{'seconds':>9}{'x ccusage':>11}{'peak MB':>9}"
          "  target")  # fmt: skip
    print(f"  {'json.loads of every line, in-process (the floor)':<56}{floor:>9.3f}"
          + (f"{floor / peer.seconds:>10.1f}x" if peer and peer.seconds else ""))  # fmt: skip
    for timing, target in ((peer, None), (reported, TARGETS["reported"]), (default, TARGETS["default"])):
        if timing is None:
            continue
        if timing.seconds is None:
            print(f"  {timing.label:<56}{'FAILED':>9}  {timing.error}")
            continue
        row = f"  {timing.label:<56}{timing.seconds:>9.3f}"
        if target is not None and peer and peer.seconds:
            ratio = timing.seconds / peer.seconds
            memory = "met" if timing.peak <= peer.peak else "NOT MET"
            row += (f"{ratio:>10.1f}x{timing.peak:>9.0f}  <= {target:g}x {'met' if ratio <= target else 'NOT MET'}, "
                    f"peak <= ccusage's {memory}")  # fmt: skip
        else:
            row += f"{'':>11}{timing.peak:>9.0f}"
        print(row)
    if peer is None:
        print("  ccusage: not found (no --ccusage, no $CCUSAGE, none on PATH), so no ratios. Install it with:\n"
              "    mkdir -p \"$PEERS\" && cd \"$PEERS\" && npm install ccusage@20.0.24 "
              "@ccusage/ccusage-linux-x64@20.0.24\n"
              "  (PEERS: any folder outside the repo),\n"
              "  then pass --ccusage \"$PEERS/node_modules/.bin/ccusage\"")  # fmt: skip

    # Cross-check the warm-up outputs against the logs: the same requests and tokens, whoever reads them.
    checks = [f"logs {logs.requests:,} requests, {logs.prompt:,} prompt / {logs.output:,} output tokens"]
    if peer and peer.seconds is not None:
        s, p, o = totals_ccusage(peer.output)
        same = (p, o) == (logs.prompt, logs.output)
        checks.append(f"ccusage {s} sessions, {p:,} / {o:,}" + ("" if same else " (DIFFERS)"))
    if reported.seconds is not None:
        s, n, p, o = totals_kcost(reported.output)
        same = (n, p, o) == (logs.requests, logs.prompt, logs.output)
        checks.append(f"kcost reported {s} sessions, {n:,} requests, {p:,} / {o:,}" + ("" if same else " (DIFFERS)"))
    print("  totals: " + "; ".join(checks))
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="15,150", help="total MB of logs per benchmark, comma-separated")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per command (median), after one warm-up")
    parser.add_argument("--ccusage", help="the ccusage executable (default: $CCUSAGE, else ccusage on PATH)")
    parser.add_argument("--keep", type=Path, help="generate the logs here once and reuse them (default: a temp dir)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    # kcost runs as an install runs it, its bytecode cached (a shell that forbids writing it times compilation)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sizes = [float(s) for s in args.sizes.split(",") if s.strip()]
    ccusage = find_ccusage(args.ccusage)
    print(f"ccusage: {ccusage or 'not found'}; kcost: {sys.executable} -m kcost; runs: {args.runs}")
    print()
    with tempfile.TemporaryDirectory(prefix="kcost-bench-") as tmp:
        for megabytes in sizes:
            start = time.perf_counter()
            root = prepared(args.keep, tmp, megabytes, args.seed)
            print(f"[{megabytes:g} MB of logs ready in {time.perf_counter() - start:.1f} s: {root}]")
            bench_size(root, megabytes, args.runs, ccusage)
            if args.keep is None:
                shutil.rmtree(root)


if __name__ == "__main__":
    main()
