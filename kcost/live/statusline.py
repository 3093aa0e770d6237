"""`kcost statusline`: one line for an agent's status-line hook, from the JSON the hook gives on stdin.

Claude Code runs the status-line command with `{"session_id", "transcript_path", "model": {"id"}, "cwd",
"workspace": {...}}` on stdin (every field may be missing: each is guarded); a log's path may be given instead.
Where the hook names no transcript, the session is looked for by its id in the agents' homes (Claude Code's
projects, Kimi Code's sessions). The line: the session's cost so far, its hit rate, and the cache clock.

Where the hook's JSON carries the agent's own figures (Claude Code's statusline input, code.claude.com/docs/en/
statusline: `cost.total_cost_usd`, `rate_limits.five_hour` and `.seven_day` with `used_percentage` and `resets_at`,
`prompt_cache.expires_at`, and from 2.1.260 `prompt_cache.last_miss_cause.causes` with `last_miss_at`), a second
line shows them, labelled as the agent's; and each miss the agent names is compared once with the cause kcost
inferred for a call at that time (`AGREES`), the result kept in the ledger (`kcost ledger` counts them).

It never fails the hook (a failing status line blanks the prompt): whatever goes wrong is one short line on
stdout, exit 0. Between calls it keeps its state in the ledger (`kcost.ledger.live`; none where the ledger is
off): the reader's (`incremental.Tail`) and the last line's figures, so a call on a log that did not change reads
no log and bills nothing, and a call after an append reads only what was appended. What a reader spills of a long
log's older messages lies in the user's cache folder (`$XDG_CACHE_HOME/kcost/live`, else `~/.cache/kcost/live`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kcost.inputs.files import RACY_NS
from kcost.live import MAX_HOOK
from kcost.live.clock import Figures, duration
from kcost.model.frozen import frozen

if TYPE_CHECKING:
    from collections.abc import Callable

    from kcost.api.settings import Settings
    from kcost.live.incremental import Tail
    from kcost.live.running import Running
    from kcost.results.prices import PriceTable

WIDTH = 80
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_STATE_VERSION = 6  # the running bill keeps its calls' times, costs and tokens
STALE_DAYS = 7  # a log's state not touched for this long is removed (far past any cache's lifetime)
# A reader's state is written again only once a look has read this much past the one kept: writing it costs in
# the session's length, reading on from it in what was appended since, so the state kept lags a few calls behind
# the log and each look reads on from it (a log that did not change reads nothing: its line is kept apart)
REREAD_CALLS = 24
REREAD_BYTES = 1 << 20
_KEEP = b""  # `_save`: the reader's state kept as it is


class Quiet(Exception):
    """What stops a status line: said in one short line, exit 0."""


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".cache"
    return root / "kcost" / "live"


# -- the hook


def hook_line(path: str | None, settings_of: Callable[[], Settings], color: str, stdin: Any, stdout: Any) -> str:
    """What one status-line call prints: the line of the log at `path`, else of the one the hook's JSON on `stdin`
    names, under the settings `settings_of` gives (resolved once the log is known), and under it the agent's own
    figures where the hook gives them; whatever goes wrong, one short line. The command line's `kcost statusline`
    and the launcher's path for a bare call both print this."""
    from kcost.errors import InputError

    try:
        agent = None
        if path is None:
            if stdin is None or stdin.isatty():
                raise Quiet("no hook input (pipe the hook's JSON, or give a log's path)")
            path, agent = hook_of(stdin.buffer.read(MAX_HOOK))
        from kcost.live.clock import now

        settings = settings_of()
        figures, moment, painted = status(path, settings), now(), colour(color, stdout)
        shown = [line(figures, moment, color=painted), *window_lines(path, figures, settings, moment, painted)]
        if agent is not None:
            agrees = compared(agent, figures)
            if agrees is not None:
                _note_miss(path, settings, agent, figures, agrees)
            shown.append(agent_line(agent, figures, moment, agrees, color=painted))
        return "\n".join(shown)
    except Quiet as exc:
        return f"kcost: {exc}"
    except InputError as exc:
        return _short(f"kcost: {exc.message}")
    except MemoryError:
        return "kcost: out of memory: the log is larger than this process may hold"
    except Exception as exc:  # noqa: BLE001 - a status line never fails its hook
        return _short(f"kcost: {type(exc).__name__}: {exc}")


def default_settings() -> Settings:
    """A bare call's settings (`kcost statusline [PATH]`, no option given): as the command's own would be, the
    config's or the defaults (its `--tokenizer` reads the variable)."""
    from kcost.api.settings import TOKENIZER_ENV, config_for, resolve

    config = config_for(None)  # the ledger as the command's: the config's, else the default one
    return resolve(config, tokenizer=os.environ.get(TOKENIZER_ENV) or None,
                   ledger=True if config.ledger is None else None)


def _short(text: str) -> str:
    from kcost.errors import printable

    one = " ".join(printable(text).split())
    return one if len(one) <= WIDTH else one[: WIDTH - 1] + "…"


@frozen
class AgentFigures:
    """What the hook's JSON says of the session itself, as the agent counts it (each None where it is not given)."""

    agent: str
    cost: Decimal | None  # the session's cost so far, as the agent estimates it
    five_hour: tuple[float, float | None] | None  # the plan's 5-hour window: percent used, when it resets
    seven_day: tuple[float, float | None] | None  # its weekly window: the same
    cache_expires_at: float | None  # when the prompt cache goes cold (Unix seconds)
    last_miss_at: float | None  # when the agent last saw the cache miss
    last_miss_causes: tuple[str, ...]  # why, in the agent's words (`tools_changed`, `ttl_expired_5m`, ...)


def hook_of(raw: bytes) -> tuple[str, AgentFigures | None]:
    """The log the hook's JSON names (its `transcript_path`, else the session its `session_id` names), and the
    agent's own figures where it gives any."""
    if not raw.strip():
        raise Quiet("no hook input (pipe the hook's JSON, or give a log's path)")
    try:
        hook = json.loads(raw[:MAX_HOOK])
    except (ValueError, RecursionError):
        raise Quiet("hook input is not JSON") from None
    if not isinstance(hook, dict):
        raise Quiet("hook input is not a JSON object")
    return _transcript(hook), agent_figures(hook)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value else None


def _window(value: Any) -> tuple[float, float | None] | None:
    if not isinstance(value, dict) or _number(value.get("used_percentage")) is None:
        return None
    return _number(value.get("used_percentage")) or 0.0, _number(value.get("resets_at"))


def agent_figures(hook: dict[str, Any]) -> AgentFigures | None:
    """Claude Code's own figures in its status-line JSON (each field guarded); None where it gives none."""
    def table(value: Any) -> dict[str, Any]:
        return value if isinstance(value, dict) else {}

    cost, limits, cache = table(hook.get("cost")), table(hook.get("rate_limits")), table(hook.get("prompt_cache"))
    causes = table(cache.get("last_miss_cause")).get("causes")
    named = tuple(str(c)[:40] for c in causes if isinstance(c, str))[:4] if isinstance(causes, list) else ()
    spent = _number(cost.get("total_cost_usd"))
    found = AgentFigures(agent="claude-code", cost=None if spent is None else Decimal(str(spent)),
                         five_hour=_window(limits.get("five_hour")), seven_day=_window(limits.get("seven_day")),
                         cache_expires_at=_number(cache.get("expires_at")),
                         last_miss_at=_number(cache.get("last_miss_at")), last_miss_causes=named)  # fmt: skip
    given = (found.cost, found.five_hour, found.seven_day, found.cache_expires_at, found.last_miss_at)
    return found if any(v is not None for v in given) or found.last_miss_causes else None


# the family of each cause the agent names, and of each reason kcost's simulator gives: two causes agree where their
# families do (the live reader knows a prefix changed, not which part of it)
AGENT_CAUSES = {"ttl_expired_5m": "expired", "ttl_expired_1h": "expired", "tools_changed": "prefix",
                "system_prompt_changed": "prefix", "messages_rewritten": "prefix", "effort_changed": "prefix",
                "betas_changed": "prefix", "model_changed": "model"}  # fmt: skip
KCOST_REASONS = {"expired": "expired", "prefix-changed": "prefix", "model-switch": "model"}
AGREES_WITHIN = 60.0  # seconds between the agent's time of a miss and kcost's for the two to be one call


def compared(agent: AgentFigures, figures: Figures) -> bool | None:
    """Whether kcost's cause of the agent's last miss agrees with the agent's (None: the agent names no cause): the
    same call (within `AGREES_WITHIN`), and a cause of the same family."""
    if agent.last_miss_at is None or not agent.last_miss_causes:
        return None
    if figures.last_miss is None or figures.last_miss_at is None:
        return False
    if abs(figures.last_miss_at - agent.last_miss_at) > AGREES_WITHIN:
        return False
    ours = KCOST_REASONS.get(figures.last_miss, figures.last_miss)
    return any(AGENT_CAUSES.get(c) == ours for c in agent.last_miss_causes)


def _note_miss(path: str, settings: Settings, agent: AgentFigures, figures: Figures, agrees: bool) -> None:
    """Keep, once, how kcost's cause of the agent's last miss compared with the agent's."""
    from kcost.ledger import live

    ledger = ledger_of(settings)
    if ledger is None or agent.last_miss_at is None:
        return
    kind = f"miss {agent.last_miss_at:.0f}"
    if kind in _kept(path, settings):
        return
    record = {"at": agent.last_miss_at, "agent": agent.agent, "causes": list(agent.last_miss_causes),
              "kcost": figures.last_miss, "agrees": agrees}  # fmt: skip
    live.put(ledger, _key(path).name, {kind: json.dumps(record).encode()})
    _ROWS.clear()


def window_lines(path: str, figures: Figures, settings: Settings, now: float, color: bool) -> list[str]:
    """Where a window's limit is set: the active window against it (`kcost.live.limits`), over this session as it
    stands and every other the ledger keeps; and a warning of each share of the limit the window reached since the
    last line that warned (each said once a window, the shares warned of kept in the ledger)."""
    if settings.window.limit is None:
        return []
    from kcost.ledger import live
    from kcost.live import limits

    ledger = ledger_of(settings)
    others = limits.kept(ledger, [log_key(path)])
    stand = limits.standing(limits.calls([figures], others), settings, now)
    if stand is None:
        return []
    held: Any = {}
    with contextlib.suppress(ValueError, TypeError, KeyError):
        held = json.loads(live.get(ledger, "windows")[limits.WARNED]) if ledger else {}
    new, record = limits.news(stand, held if isinstance(held, dict) else {})
    if new and ledger is not None:
        live.put(ledger, "windows", {limits.WARNED: json.dumps(record).encode()})
    warnings = [f"warning: {w}" for w in stand.warnings(new)]
    if color:
        warnings = [f"\x1b[{'31' if s >= 1 else '33'}m{w}\x1b[0m" for s, w in zip(new, warnings, strict=True)]
    return [limits.window_line(stand, color=color, width=WIDTH), *warnings]


def agent_line(agent: AgentFigures, figures: Figures, now: float, agrees: bool | None, *, color: bool = False) -> str:
    """`claude-code: $0.42 · 5h 24% · 7d 41% · last miss ttl_expired_5m (kcost agrees) · cache 4m10s`: the agent's
    own figures, the most telling first, as many as fit in 80 columns."""
    from kcost.render.display import money

    parts = []
    if agent.cost is not None:
        parts.append(money(agent.cost, total=True))
    for name, window in (("5h", agent.five_hour), ("7d", agent.seven_day)):
        if window is not None:
            parts.append(f"{name} {window[0]:.0f}%")
    if agent.last_miss_causes:
        verdict = "" if agrees is None else " (kcost agrees)" if agrees else f" (kcost: {figures.last_miss or 'none'})"
        parts.append(f"last miss {'/'.join(agent.last_miss_causes)}{verdict}")
    if agent.cache_expires_at is not None:
        left = agent.cache_expires_at - now
        parts.append(f"cache {duration(left)}" if left > 0 else "cache cold")
    text = f"{agent.agent}:"
    for n, part in enumerate(parts):
        more = f"{text}{' ' if n == 0 else ' · '}{part}"
        if len(more) > WIDTH:
            break
        text = more
    return f"\x1b[2m{text}\x1b[0m" if color else text


def _transcript(hook: dict[str, Any]) -> str:
    """The log the hook's JSON names: its `transcript_path`, else the session its `session_id` names."""
    path = hook.get("transcript_path")
    if isinstance(path, str) and path.strip() and os.path.isfile(path):
        return path
    session = hook.get("session_id")
    if isinstance(session, str) and re.fullmatch(r"[\w.-]{1,200}", session):
        found = find_session(session)
        if found is not None:
            return found
    if isinstance(path, str) and path.strip():
        raise Quiet("no transcript yet")
    raise Quiet("the hook names no transcript")


def find_session(session_id: str) -> str | None:
    """A Claude Code log (`<id>.jsonl`) or a Kimi Code wire (`<id>/agents/main/wire.jsonl`) in the homes."""
    from kcost.readers.homes import places

    folders, _ = places()
    for folder in folders:
        if folder.agent == "claude-code":
            hits = sorted(folder.path.glob(f"*/{session_id}.jsonl"))
        elif folder.agent == "kimi-code":
            hits = sorted(folder.path.glob(f"*/{session_id}/agents/main/wire.jsonl"))
        else:
            continue
        if hits:
            return str(hits[0])
    return None


# -- state between calls


def log_key(path: str) -> str:
    """What names the log at `path` in the ledger's live rows."""
    return _key(path).name


def _key(path: str) -> Path:
    real = os.path.realpath(path)
    from kcost.inputs.files import blake2b

    return cache_dir() / blake2b(real.encode("utf-8", "surrogateescape"), digest_size=12).hexdigest()


def _settings_key(settings: Settings) -> str:
    """What a kept state was computed from besides the log: the settings, and the price and tokenizer files each
    by identity and content (`stamp`: an edit in place changes its change time, and the checksum of its bytes)."""
    from kcost.inputs.files import stamp as file_stamp
    from kcost.pricing.prices import stamp

    tokenizer: tuple[int, ...] | None = None
    if settings.tokenizer:
        with contextlib.suppress(OSError):  # the call says why, as a bill would
            tokenizer = file_stamp(settings.tokenizer, content=True)
    return repr((_STATE_VERSION, settings.cache.label, str(settings.prices), settings.usage, settings.model,
                 str(settings.at), settings.input_format, settings.tokenizer, stamp(settings.prices), tokenizer,
                 settings.window.limit is not None))  # with a limit, the running bill keeps its calls


def ledger_of(settings: Settings) -> str | None:
    """The ledger that keeps a live view's state: the settings' (none where a config says `ledger = false`), else,
    for settings no config made, the default one (None: the ledger is off)."""
    from kcost.ledger import default_path

    if settings.ledger is not None or settings.config is not None:
        return settings.ledger
    return default_path()


# what the ledger keeps of the log looked at last (`_kept`): its rows by kind, read once a call
_ROWS: dict[str, dict[str, bytes]] = {}


def _kept(path: str, settings: Settings) -> dict[str, bytes]:
    """The rows the ledger keeps of the log at `path`, read once a call."""
    key = _key(path).name
    if key not in _ROWS:
        _ROWS.clear()
        ledger = ledger_of(settings)
        from kcost.ledger import live

        _ROWS[key] = live.get(ledger, key) if ledger else {}
    return _ROWS[key]


def _stat(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _remembered(path: str, settings: Settings) -> Figures | None:
    """The last call's figures, where the log is as it was then."""
    _ROWS.clear()  # a call reads the state afresh
    try:
        held = json.loads(_kept(path, settings)["line"])
        stat = _stat(path)
        if held["stat"] != stat or held["settings"] != _settings_key(settings):
            return None
        if stat is None or held.get("at", 0) - max(stat[3], stat[4]) < RACY_NS:
            return None  # changed within a tick of the file system's clock before: the reader checks its bytes
        if settings.window.limit is None:
            return Figures.of(held["figures"])
        from kcost.live.clock import calls_of

        return Figures.of(held["figures"], calls_of(_kept(path, settings)["calls"]))
    except (OSError, ValueError, KeyError, TypeError, ArithmeticError):
        return None


def _load(path: str, settings: Settings) -> tuple[Tail, Running | None, PriceTable | None]:
    """The reader's state, the running bill and the price table it is priced at as the last call left them,
    where they were kept for this log under these settings and prices (the price files as they were then:
    `prices.stamp`; a running bill priced at others is of no use); else a reader at the start."""
    import pickle

    from kcost.live.incremental import Tail

    try:
        held = pickle.loads(_kept(path, settings)["tail"])
        tail = held["tail"]
        if held["settings"] == _settings_key(settings) and isinstance(tail, Tail) and tail.path == path:
            return tail, held["running"], held.get("prices")
    except Exception:  # a state from another version, or broken: read afresh
        pass
    return Tail(path, settings.prompts), None, None


def _save(path: str, state: bytes | None, figures: Figures, seen: Any, settings: Settings) -> None:
    """The state, written whole or not at all (a ledger that cannot be written or is busy, or a state that could
    not be kept: the next call reads afresh, and a call on the log unchanged still answers from the line kept);
    `_KEEP`: the reader's state kept is left as it is, the line's figures written."""
    import time

    from kcost.ledger import live

    ledger = ledger_of(settings)
    if ledger is None:
        return
    key = _key(path)
    held = {"stat": [*seen.__dict__.values()] if seen else None, "settings": _settings_key(settings),
            "at": time.time_ns(),
            "figures": figures.plain()}  # fmt: skip
    if "line" not in _kept(path, settings):  # a log looked at for the first time: stale state is pruned
        live.prune(ledger, time.time() - STALE_DAYS * 86_400)
        prune(key.parent)
    rows: dict[str, bytes | None] = {"line": json.dumps(held).encode()}
    if settings.window.limit is not None:  # the calls of the window the status lines share (`kcost.live.limits`)
        from kcost.live.clock import calls_text

        rows["calls"] = calls_text(figures.recent)
    if state is None:
        rows["tail"] = None  # never the reader's state of the log as it was
    elif state:
        rows["tail"] = state
    live.put(ledger, key.name, rows)
    _ROWS.clear()


def remember(path: str, figures: Figures, seen: Any, settings: Settings) -> None:
    """Keep `figures` as the line of the log at `path` as it was `seen` (`watch`'s look), its reader's state as it
    is: the next status line on the log unchanged answers from them."""
    _ROWS.clear()
    _save(path, _KEEP, figures, seen, settings)


def prune(folder: Path, now: float | None = None) -> int:
    """Remove from `folder` (the cache folder's own) what readers spilled of every log none of whose files was
    touched for `STALE_DAYS` (sessions long over: a log's files go together, so no state is left half); how many
    files went. Anything that cannot be removed stays."""
    import time

    cutoff = (time.time() if now is None else now) - STALE_DAYS * 86_400
    logs: dict[str, list[tuple[str, float]]] = {}
    try:
        for entry in os.scandir(folder):
            if entry.is_file(follow_symlinks=False):
                logs.setdefault(entry.name.split(".", 1)[0], []).append((entry.path, entry.stat().st_mtime))
    except OSError:
        return 0
    gone = 0
    for files in logs.values():
        if max(when for _, when in files) >= cutoff:
            continue
        for path, _ in files:
            try:
                os.unlink(path)
                gone += 1
            except OSError:
                continue
    return gone


def _state(tail: Tail, running: Running | None, settings: Settings, prices: PriceTable | None = None) -> bytes | None:
    """The reader's state and the running bill (and the price table it is billed at: loading the table costs more
    than reading it back), under the settings' key (the price files' stamps in it), as bytes to keep (the log's
    older messages kept apart); None where they cannot be kept (a log's values nested deeper than pickle goes)."""
    import pickle

    spill = getattr(tail.reader, "spill", None)
    if spill is not None:
        try:
            _key(tail.path).parent.mkdir(parents=True, exist_ok=True)
            for gone in spill(str(_key(tail.path).with_suffix(".lines"))):
                os.unlink(gone)
        except (OSError, RecursionError, pickle.PicklingError):
            pass  # kept whole, then
    session, tail.session = tail.session, None  # built again from the calls: not worth its bytes
    try:
        held: dict[str, Any] = {"settings": _settings_key(settings), "tail": tail, "running": running}
        if running is not None and prices is not None:
            held["prices"] = prices
        return pickle.dumps(held, protocol=pickle.HIGHEST_PROTOCOL)
    except (RecursionError, pickle.PicklingError, TypeError):
        return None
    finally:
        tail.session = session


# The state the last call loaded, held until the next: a status line's process ends once its line is out
# (`kcost.launch`), so what it loaded object by object is not freed so too (5-10 ms of a call on a long session).
_LOADED: list[Any] = []


def status(path: str, settings: Settings) -> Figures:
    """The figures of the log at `path` as it stands, read incrementally from the last call's state; a state
    that is gone or broken in part (a file of it removed) is dropped and the log read afresh, silently."""
    from kcost.readers.agents.claude_code_live import StateGone

    try:
        return _status(path, settings)
    except StateGone:
        _forget(path, settings)
        return _status(path, settings)


def _forget(path: str, settings: Settings) -> None:
    """Drop every state kept of the log at `path`: its rows in the ledger, what its reader spilled."""
    from kcost.ledger import live

    key = _key(path)
    ledger = ledger_of(settings)
    if ledger is not None:
        live.forget(ledger, key.name)
    _ROWS.clear()
    for file in key.parent.glob(f"{key.name}.*"):
        try:
            file.unlink()
        except OSError:
            continue


def _status(path: str, settings: Settings) -> Figures:
    held = _remembered(path, settings)
    if held is not None:
        return held
    from kcost.live.running import supports

    tail, running, prices = _load(path, settings)
    _LOADED[:] = [tail, running, prices]
    offset, rebuilds = tail.offset, tail.rebuilds
    tail.advance(settings)
    if tail.rebuilds != rebuilds:  # the log was rewritten: the running bill was of another
        running = None
    kept_at = offset if running is not None else None
    if tail.resumable and supports(settings):
        kept = _kept_running(tail, running, settings, kept_at, prices)
        if kept is not None:
            return kept
    from kcost import api
    from kcost.live.clock import figures

    if tail.resumable and tail.reader is not None and running is not None:
        tail.restart(settings)  # the calls read before were handed to the running bill: read them again
    session = tail.built(settings)
    bill = api.bill(session, settings=settings)
    result = figures(session, bill, settings)
    _save(path, _state(tail, None, settings), result, tail.seen, settings)
    return result


def _kept_running(tail: Tail, running: Running | None, settings: Settings, kept_at: int | None,
                  kept_prices: PriceTable | None = None) -> Figures | None:  # fmt: skip
    """The figures from the running bill, taken on with the calls closed since the state kept (then kept with
    them, once `REREAD_CALLS` or `REREAD_BYTES` were read on past it: `kept_at`, None where none was read) and
    the response still open; None where the session cannot be followed call by call."""
    from kcost import api
    from kcost.errors import InputError
    from kcost.live.running import Running

    prices = kept_prices if kept_prices is not None else api.price_table(settings.prices)  # kept: as it would load
    if running is None or not running.extend(tail.reader.closed, prices):
        if running is not None:
            tail.restart(settings)  # the calls before were sized otherwise now: the whole log again
        running = Running.batch(tail.path, tail.reader.closed, settings, prices)
        if running is None:
            return None
        kept_at = None
    read_on = len(tail.reader.closed)
    tail.reader.closed = []
    due = kept_at is None or read_on >= REREAD_CALLS or tail.offset - kept_at >= REREAD_BYTES
    state = _state(tail, running, settings, prices) if due else _KEEP
    pending = tail.reader.open_calls()
    if pending and not running.extend(pending, prices):
        # the open responses size the calls before them otherwise: the whole log, those responses included
        from kcost.live.incremental import Tail

        whole = Tail(tail.path, tail.prompts)
        whole.advance(settings)
        again = Running.batch(tail.path, whole.reader.calls(), settings, prices)
        if again is None:
            tail.restart(settings)  # the calls closed before were handed to the running bill: read them again
            return None
        running = again
    if not running.totals.turns:
        raise InputError("no model calls in it yet", source=tail.path)
    result = running.figures(prices)
    _save(tail.path, state, result, tail.seen, settings)
    return result


# -- the line


def line(f: Figures, now: float, *, color: bool = False) -> str:
    """`kimi-k3 $213.21 · hit 93.1% · cache 4m05s: next $0.13, after $1.21`, at most 80 columns."""
    from kcost.render.display import money, percent

    def paint(text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if color else text

    left = f.left(now)
    if not f.caching:
        clock = paint("no cache", "2")
    elif left is None:
        clock = paint("cache: no times logged", "2") if f.ttl is not None else paint("cache kept", "32")
    elif left > 0:
        code = "32" if left > 60 else "33"
        clock = (paint(f"cache {duration(left)}", code) + f": next {money(f.warm_next)}, after "
                 f"{money(f.cold_next)}")  # fmt: skip
    else:
        assert f.last_call is not None and f.ttl is not None
        ago = duration(now - f.last_call - f.ttl)
        clock = paint(f"cache cold {ago}", "31") + f": next {money(f.cold_next)} (warm {money(f.warm_next)})"
    rest = f" {paint(money(f.total, total=True), '1')} · hit {percent(f.hit_rate)} · {clock}"
    room = WIDTH - _width(rest)
    model = f.model if len(f.model) <= room else f.model[: max(room - 1, 0)] + "…"
    return (model + rest)[: WIDTH + (len(model + rest) - _width(model + rest))] if room < 1 else model + rest


def _width(text: str) -> int:
    return len(_ANSI.sub("", text))


def colour(choice: str, stream: Any) -> bool:
    """The usual conventions: `NO_COLOR` turns it off, `FORCE_COLOR` on, else a terminal gets it."""
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())
