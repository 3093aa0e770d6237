"""Claude Code project logs generated deterministically (seeded), laid out as Claude Code writes them: the test
data of the tests that need many or large logs, and of the benchmarks (`bench/bench_claude_logs.py`).

`<dir>/projects/<project>/<uuid>.jsonl`: one assistant line per content block (thinking, text, tool_use) repeating
the response's `message.id`, `requestId` and usage; `tool_result` user lines (source code, command output) with a
`toolUseResult` copy; progress, system and file-history-snapshot lines; usage that grows with what each request
adds on top of an unlogged ~15,000-token system prompt and tools, cache reads of the previous prompt, misses after
an expired 5-minute cache, and auto-compaction near the context limit.
"""

from __future__ import annotations

import base64
import json
import random
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


# -- sub-agents as Claude Code writes them


SUB_AGENT_PROMPT = 12_000  # a sub-agent's system prompt and tools: never logged


def parallel_session(folder: Path, agents: int, *, agent_ids: bool = False, request_ids: bool = True,
                     interleaved: bool = True, files: bool = False, progress: bool = False, seed: int = 3) -> Path:
    """A main conversation and `agents` Task sub-agents run at once, logged as Claude Code writes them.

    Each response is a line per content block (thinking, text, tool_use), every block repeating the response's
    `message.id`, `requestId` (where `request_ids`) and input-side usage, the output count growing to the last
    block's; each tool's result is a user line after its block. The usage is what a cache of each conversation's
    own prefix bills: a call reads back the conversation's previous prompt and writes what it adds.

    The parent's log is `<folder>/<session>.jsonl` (its path returned). Where the sub-agents go:
    - into the parent's log as sidechain lines (`isSidechain`, with `agentId` where `agent_ids`: Claude Code up
      to 2.0.27 wrote no agent id), `interleaved` as the agents ran at once, else each agent's lines together (as
      they are written when the agent ends);
    - with `files`, each into `<folder>/<session>/subagents/agent-<id>.jsonl` (Claude Code 2.1.2 and later), and
      with `progress` the parent also copies each sub-agent's tool calls and results as `agent_progress` lines
      (Claude Code 2.1.8 to 2.1.84).
    """
    rng = random.Random(seed)
    session = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    t0 = datetime(2026, 3, 2, 10, 0, tzinfo=timezone.utc).timestamp()

    def envelope(**fields: object) -> dict[str, object]:
        return {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/home/dev/app",
                "sessionId": session, "version": "2.0.20", "gitBranch": "main", **fields}  # fmt: skip

    def text(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n))

    def conversation(name: str | None, model: str, first: str, calls: int, start: float, prefix: int,
                     ) -> list[tuple[float, dict[str, object], dict[str, object] | None]]:  # fmt: skip
        """(time, line, the progress copy's data or None) of one conversation."""
        side = {"isSidechain": True, **({"agentId": name} if agent_ids and name else {})} if name else {}
        out: list[tuple[float, dict[str, object], dict[str, object] | None]] = []
        t, root = start, str(uuid.UUID(int=rng.getrandbits(128), version=4))
        task = {"role": "user", "content": [{"type": "text", "text": first}]}
        copy = {"type": "user", "timestamp": stamp(t), "uuid": root, "message": task} if name else None
        out.append((t, envelope(type="user", uuid=root, timestamp=stamp(t), **side, message=task), copy))
        parent, prompt, cached = root, prefix + len(first) // 4, 0
        for k in range(calls):
            t += rng.uniform(2, 6)
            mid, rid = f"msg_{name or 'main'}_{k:02d}", f"req_{name or 'main'}_{k:02d}"
            tool = f"toolu_{name or 'main'}_{k:02d}"
            read = {"type": "tool_use", "id": tool, "name": "Read", "input": {"file_path": f"/app/f{k}.py"}}
            thought = {"type": "thinking", "thinking": text(60), "signature": "sig"}
            blocks = [thought, {"type": "text", "text": text(25)}, read]
            for b, block in enumerate(blocks):
                usage = {"input_tokens": 3, "cache_creation_input_tokens": prompt - cached - 3,
                         "cache_read_input_tokens": cached, "output_tokens": 9 if b < 2 else 180}  # fmt: skip
                line_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
                ids = {"requestId": rid} if request_ids else {}
                message = {"id": mid, "type": "message", "role": "assistant", "model": model, "content": [block],
                           "stop_reason": None, "usage": usage}  # fmt: skip
                assistant = envelope(type="assistant", uuid=line_id, parentUuid=parent, timestamp=stamp(t + b / 100),
                                     **side, **ids, message=message)  # fmt: skip
                copy = None
                if name and block["type"] == "tool_use":
                    copy = {"type": "assistant", "timestamp": stamp(t), "uuid": line_id, **ids,
                            "message": assistant["message"]}  # fmt: skip
                out.append((t + b / 100, assistant, copy))
                parent = line_id
            cached = prompt
            prompt += 180
            t += rng.uniform(0.2, 1.0)
            result_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            body = text(rng.randint(300, 900))
            result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool, "content": body}]}
            copy = {"type": "user", "timestamp": stamp(t), "uuid": result_id, "message": result} if name else None
            out.append((t, envelope(type="user", uuid=result_id, parentUuid=parent, timestamp=stamp(t), **side,
                                    message=result), copy))  # fmt: skip
            parent = result_id
            prompt += len(body) // 3
        return out

    main = conversation(None, "claude-opus-4-6", "explore the app and report what the modules do", 6, t0, 15_000)
    subs = [conversation(f"a{n + 1:06x}", "claude-haiku-4-5-20251001", f"Task {n + 1}: read module {n + 1} "
                         + text(120), 5, t0 + 20 + n * 0.3, SUB_AGENT_PROMPT) for n in range(agents)]  # fmt: skip
    path = folder / f"{session}.jsonl"
    folder.mkdir(parents=True, exist_ok=True)
    if not files:
        sub_lines = [x for s in subs for x in s]
        if interleaved:
            sub_lines.sort(key=lambda x: x[0])
        lines = [line for _, line, _ in sorted(main, key=lambda x: x[0])] + [line for _, line, _ in sub_lines]
    else:
        subagents = folder / session / "subagents"
        subagents.mkdir(parents=True, exist_ok=True)
        timed = [(t, line) for t, line, _ in main]
        for n, sub in enumerate(subs):
            name = f"a{n + 1:06x}"
            with_id = [{**line, "agentId": name} for _, line, _ in sub]
            (subagents / f"agent-{name}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in with_id))
            if progress:
                task = sub[0][1]["message"]["content"][0]["text"]  # type: ignore[index]
                for t, _, copy in sub:
                    if copy is None:
                        continue
                    data = {"message": copy, "normalizedMessages": [], "type": "agent_progress",
                            "prompt": task, "agentId": name}
                    timed.append((t, envelope(type="progress",
                                              uuid=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                                              timestamp=stamp(t), toolUseID=f"agent_msg_main_{n}",
                                              parentToolUseID=f"toolu_task_{n}", data=data)))  # fmt: skip
        # Progress lines sit on the parent's chain as they are written: each follows the line before it, and so
        # does the parent's next response (a tool's result still follows its tool call).
        lines = [line for _, line in sorted(timed, key=lambda x: x[0])]
        for before, line in zip(lines, lines[1:], strict=False):
            if line["type"] == "progress" or (line["type"] == "assistant" and before["type"] == "progress"):
                line["parentUuid"] = before["uuid"]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path
