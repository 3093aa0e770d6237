"""The readers, one line each: the transcript formats in `READERS`, the one list that drives log detection (in
its order), the `--input-format` choices, their help text and the README's table of formats; and the turn-spec
notations in `TURN_SPECS`, tried before them.

A reader is one module with one class that implements `Reader`: its name, detection from a file's first record
(or a folder's files), `read` giving the calls of one session with notes on what it skipped, and the session's
name. Each call carries its own model and time. A format whose session can span several files of one run
(a Batch API run's input and output files, a Claude Code session and its sub-agents' files) claims them as they
are found (`claim`), tells which make one session once all are found (`join`, which may also settle what the
files repeat of each other) and reads each session's together (`read_parts`); a turn spec, which holds requests
rather than calls, is claimed as the session it describes.
The code that finds sessions knows no format. Adding a reader is one file and one line here; this module
imports none of them until asked (each line names its reader's class as "module:Class"), so the command line's
help, which lists the formats, loads no reader (tests/test_cli.py). An agent's reader names, on its line,
where the agent keeps its logs (`Home`): what `kcost bill` with no path reads (`kcost.readers.homes`).
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from kcost.model.frozen import frozen

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from kcost.errors import Leniency
    from kcost.model.calls import Call
    from kcost.model.session import Session
    from kcost.readers.source import Source


@frozen
class Part:
    """A file its reader joins with others of the same run into one session, and what the reader parsed of it
    to know that (the reader's own, opaque here)."""

    source: Source
    parsed: Any


class Reader:
    """A reader of one format. What every reader must give is three members: `name`, `detect` (or `recognise`, for
    a format not known by its first record) and `read`. The rest are optional hooks, each defaulting to what a
    format whose session is one file of JSON needs:

    - detection: `suffixes` (the files a folder walk offers it), `vet` (a file detection gave it, passed over);
    - sessions kept in a folder: `is_session_folder`, `folder_of`;
    - sessions spread over files of a run: `claim`, `join`, `read_parts`, and the early read of a part that looks
      alone (`alone`, `spent`, `reads_again`);
    - what a bill says of a session: `comparable`, `session_name`, `project`;
    - what `kcost formats` says of it: `one_call`, `usage_read`, `source_read` (an agent's reader gives all three).

    A unit is a file (`Source`) or, for a format that keeps a session in several files, the folder (`Path`) that
    `is_session_folder` claims."""

    # -- what every reader must give

    name: str = ""

    def detect(self, first: Any) -> bool:
        """Whether a file whose first record (its first JSON line, or its one document) is `first` is this format.
        May raise `InputError` for a file of this format that cannot be read alone."""
        return False

    def recognise(self, source: Source) -> bool:
        """Whether `source` is this format (asked in the order of detection, before any later reader): by default,
        whether its first record is a mapping `detect` takes. May raise `InputError`."""
        first = source.first_record
        return isinstance(first, dict) and self.detect(first)

    def read(
        self, unit: Source | Path, notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        """The session's calls in order, each with its model and time where logged. `prompts=False`: the caller
        needs only usage, models and times, so messages need not be rebuilt (`Call.messages` may be None).
        `leniency`: what a bad record does (stops the read, or is skipped and counted)."""
        raise NotImplementedError

    # -- detection

    # its files' suffixes (JSON, whole or a record a line): a folder walk offers every file whose suffix some
    # reader names to detection, whatever the format asked for
    suffixes: tuple[str, ...] = (".jsonl", ".ndjson", ".json")

    def vet(self, source: Source) -> None:
        """Asked of a file a folder walk found and detection gave this format: raise `InputError` to pass it over
        (listed as skipped) when it is none after all (a format known by its file's name alone checks here)."""

    # -- sessions kept in a folder

    def is_session_folder(self, folder: Path) -> bool:
        """Whether `folder` holds one session of this format (formats that keep a session in several files)."""
        return False

    def folder_of(self, file: Path) -> Path | None:
        """The session folder a file given alone belongs to, for a format that reads folders."""
        return None

    # -- sessions spread over files of a run

    def claim(self, unit: Source | Path, *, prompts: bool = True) -> Source | Path | Part | Session | list[Any]:
        """What becomes of a unit of this format that a run found, asked before it is read, in the order found
        (`prompts`: whether the run rebuilds prompts, as `read` is told):
        the unit (read alone: the default); the reader's own parsed form of it (read alone, in this process,
        from what was parsed); a `Part` of a session this format joins from several files of the run, read
        with the others of its run by `read_parts` once every unit is found; the `Session` it is, read now
        (a turn spec: requests as written, no calls to rebuild); or a list of the reader's own parsed forms, each
        read as a session of its own (a store holding several, as OpenCode's database; an empty list: a unit
        whose sessions another unit of the run holds). May raise `InputError`."""
        return unit

    def join(self, parts: list[Part]) -> list[list[Part]]:
        """The sessions the `Part`s `claim` returned make, once every unit of the run is found: each the parts
        `read_parts` reads together (the reader may hand each its own parsed form anew). By default, all of
        them one session."""
        return [parts]

    def read_parts(
        self, parts: list[Part], notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        """The calls of one session `join` made of the `Part`s `claim` returned."""
        raise NotImplementedError

    def links(self, parsed: Any) -> frozenset[str] | None:
        """The keys by which a `Part` (its parsed form, as claimed) may join or share a call with the run's other
        parts, for the ledger (`kcost.ledger`), which reads again only the parts a changed one may touch: parts
        that share no key make sessions apart. None (the default): it may join any part of this format."""
        return None

    def reads_again(self, parts: list[Part]) -> bool:
        """Whether `read_parts` parses these parts' files again (by default it does); one that reads them from what
        `claim` kept is read in the run's own process, where sending the parts to a worker would cost more."""
        return True

    def alone(self, part: Part) -> bool:
        """Whether a `Part` just claimed looks like a session of its own that `read_parts` reads from what `claim`
        kept: it is then read as one where it was claimed, before the run is joined (by default none is). A
        guess the join holds to account: that session is the run's only where the join makes the part a session
        of its own as it was claimed (its parsed form, `spent`, unchanged); else the part is read with its
        session's others, as any part is."""
        return False

    def spent(self, parsed: Any) -> Any:
        """What of a `Part`'s parsed form the run keeps once the part was read `alone` (what `join` needs of it):
        by default all of it."""
        return parsed

    # -- what `kcost formats` says of it (every agent's reader says all three)

    one_call: str = ""  # what in the log is one call ("a `token_count` event")
    usage_read: str = ""  # how its usage becomes a prompt (cached in it) and an output (reasoning in it)
    source_read: str = ""  # the agent's source (or the careful reader of a closed agent's files) this was read from

    # -- what a bill says of a session

    comparable: bool = True  # its logged cache hits come from a Kimi cache: the agreement with the simulator counts

    def session_name(self, unit: Source | Path) -> str:
        return unit.stem if not isinstance(unit, Path) else unit.resolve().name

    def project(self, unit: Source | Path) -> str | None:
        """The project the session's log records (the agent's working directory), where it records one."""
        return None


class Home(NamedTuple):
    """Where an agent keeps its logs, as the agent itself finds them: the folder `env` names (with `several`,
    several, comma-separated), else each of `defaults` (`~` is the user's home, `${VAR:-fallback}` the folder a
    variable names, else the fallback); under each, the log folders `logs` that exist, whose files named as `files`
    (a pattern: `*` for any) hold the sessions."""

    env: str
    defaults: tuple[str, ...]
    logs: tuple[str, ...]
    files: str = "*"
    several: bool = False


class Entry(NamedTuple):
    name: str  # the --input-format value
    target: str  # "module:Class"
    what: str  # one line for the help text and the README
    home: Home | None = None  # where the agent keeps its logs (none: kcost reads them only where told)
    folders: tuple[str, ...] = ()  # its reader keeps a session in a folder (`folder_of`, `is_session_folder`): the
    # names (patterns) of the files `folder_of` may claim; it is loaded to ask of a file given alone only where the
    # file's name is one of them, so no other reader is loaded to read a file of another format

    def load(self) -> Reader:
        module, _, cls = self.target.partition(":")
        reader: Reader = getattr(import_module(module), cls)()
        return reader


# The homes, each as its agent finds it: Kimi CLI's `get_share_dir` (kimi_cli/share.py), Kimi Code's
# `resolveKimiHome` (packages/agent-core/src/config/path.ts), Codex's `find_codex_home` (codex-rs/utils/home-dir)
# with its `sessions` and `archived_sessions`; Claude Code's as ccusage finds them (`getClaudePaths`): the folders
# CLAUDE_CONFIG_DIR names replace the two defaults, and either holds a `projects` folder.
READERS: tuple[Entry, ...] = (  # in the order detection tries them: the most particular first
    Entry("kimi-cli", "kcost.readers.agents.kimi_cli:KimiCli",
          "a legacy Kimi CLI session folder (context*.jsonl + wire.jsonl), a 0.10-0.58 session file "
          "(<session id>.jsonl, its rotations and sub-agents beside it) or a ~/.kimi/sessions tree",
          Home("KIMI_SHARE_DIR", ("~/.kimi",), ("sessions",), "*.jsonl"), folders=("wire.jsonl", "context*.jsonl")),
    Entry("kimi-code", "kcost.readers.agents.kimi_code:KimiCode",
          "a Kimi Code wire (agents/<agent>/wire.jsonl) or a ~/.kimi-code/sessions tree",
          Home("KIMI_CODE_HOME", ("~/.kimi-code",), ("sessions",), "wire.jsonl")),
    Entry("codex", "kcost.readers.agents.codex:Codex", "Codex CLI rollouts (~/.codex/sessions/.../rollout-*.jsonl)",
          Home("CODEX_HOME", ("~/.codex",), ("sessions", "archived_sessions"), "*.jsonl")),
    Entry("claude-code", "kcost.readers.agents.claude_code:ClaudeCode",
          "Claude Code project logs (~/.claude/projects/<project>/<session>.jsonl)",
          Home("CLAUDE_CONFIG_DIR", ("${XDG_CONFIG_HOME:-~/.config}/claude", "~/.claude"), ("projects",),
               "*.jsonl", several=True)),
    # Amp's thread (one JSON document with `messages`) before the Kimi API's requests, which it would pass for;
    # its folder as ccusage finds it (AMP_DATA_DIR, a comma-separated list, else ~/.local/share/amp).
    Entry("amp", "kcost.readers.agents.amp:Amp", "Amp threads (~/.local/share/amp/threads/T-<thread>.json)",
          Home("AMP_DATA_DIR", ("~/.local/share/amp",), ("threads",), "*.json", several=True)),
    Entry("kimi-api", "kcost.readers.agents.kimi_api:KimiApi",
          "Kimi / OpenAI chat-completions logs: requests, request/response pairs, Batch API files, responses, "
          "streamed chunks, kimi --print stream-json"),
    # OpenCode's data folder as `Global.Path.data` names it (xdg-basedir), its `opencode*.db` and `storage/` read
    # as one store (ccusage's OPENCODE_DATA_DIR names it instead); Gemini CLI's `homedir()`
    # (packages/core/src/utils/paths.ts: GEMINI_CLI_HOME, else the user's) holding `.gemini/tmp`; Qwen Code's
    # `getGlobalQwenDir()` (QWEN_HOME, else ~/.qwen) holding `projects`.
    Entry("opencode", "kcost.readers.agents.opencode:OpenCode",
          "OpenCode sessions: its data folder (~/.local/share/opencode: opencode.db and the older storage/ JSON "
          "files) or a session's storage/message/<session> folder",
          Home("OPENCODE_DATA_DIR", ("${XDG_DATA_HOME:-~/.local/share}/opencode",), (".",), "opencode*.db",
               several=True), folders=("opencode*.db", "*.json")),
    Entry("gemini-cli", "kcost.readers.agents.gemini_cli:GeminiCli",
          "Gemini CLI chats (~/.gemini/tmp/<project>/chats/session-*.jsonl, and the older .json)",
          Home("GEMINI_CLI_HOME", ("~",), (".gemini/tmp",), "session-*")),
    Entry("qwen-code", "kcost.readers.agents.qwen_code:QwenCode",
          "Qwen Code chats (~/.qwen/projects/<project>/chats/<session>.jsonl)",
          Home("QWEN_HOME", ("~/.qwen",), ("projects",), "*.jsonl")),
    Entry("github-copilot", "kcost.readers.agents.copilot:GithubCopilot",
          "GitHub Copilot CLI sessions (~/.copilot/session-state/<session>/events.jsonl: each model's totals at "
          "every exit) and its OpenTelemetry file export (~/.copilot/otel/*.jsonl)",
          Home("COPILOT_HOME", ("~/.copilot",), ("session-state", "otel"), "*.jsonl")),
    Entry("antigravity", "kcost.readers.agents.antigravity:Antigravity",
          "Antigravity conversations (~/.gemini/antigravity-cli/conversations/<conversation>.db, and the IDE's "
          "and desktop app's)",
          Home("ANTIGRAVITY_DATA_DIR", ("~/.gemini/antigravity-cli", "~/.gemini/antigravity-ide",
                                        "~/.gemini/antigravity"), ("conversations",), "*.db", several=True)),
    Entry("grok", "kcost.readers.agents.grok:Grok",
          "Grok Build CLI sessions (~/.grok/sessions/<cwd>/<session>/updates.jsonl)",
          Home("GROK_HOME", ("~/.grok",), ("sessions",), "updates.jsonl")),
    Entry("zcode", "kcost.readers.agents.zcode:Zcode",
          "ZCode's usage ledger (~/.zcode/cli/db/db.sqlite), a session each",
          Home("ZCODE_HOME", ("~/.zcode",), ("cli/db",), "db.sqlite", several=True)),
    # Droid's, Codebuff's and Hermes's homes as ccusage finds them: DROID_SESSIONS_DIR and CODEBUFF_DATA_DIR are
    # ccusage's (comma-separated lists; neither agent has a variable of its own); Hermes's `get_hermes_home`
    # (HERMES_HOME, else ~/.hermes), its profiles' databases under it read too.
    Entry("droid", "kcost.readers.agents.droid:Droid",
          "Factory Droid sessions (~/.factory/sessions/<cwd>/<session>.settings.json: a running total each)",
          Home("DROID_SESSIONS_DIR", ("~/.factory/sessions",), (".",), "*.settings.json", several=True)),
    Entry("codebuff", "kcost.readers.agents.codebuff:Codebuff",
          "Codebuff chats (~/.config/manicode/projects/<project>/chats/<chat>/chat-messages.json)",
          Home("CODEBUFF_DATA_DIR", ("~/.config/manicode", "~/.config/manicode-dev", "~/.config/manicode-staging"),
               ("projects",), "chat-messages.json", several=True)),
    Entry("hermes", "kcost.readers.agents.hermes:Hermes",
          "Hermes Agent sessions (~/.hermes/state.db, and each profile's), a running total each",
          Home("HERMES_HOME", ("~/.hermes",), (".",), "state.db"), folders=("state.db",)),
    # OpenClaw's transcripts are pi's: its reader, which knows them by what only OpenClaw writes, before pi's
    Entry("openclaw", "kcost.readers.agents.openclaw:OpenClaw",
          "OpenClaw sessions (~/.openclaw/agents/<agent>/agent/openclaw-agent.sqlite, and the older "
          "agents/<agent>/sessions/<session>.jsonl)",
          Home("OPENCLAW_STATE_DIR", ("~/.openclaw", "~/.clawdbot", "~/.moltbot", "~/.moldbot"), ("agents",),
               "*.jsonl"), folders=("openclaw-agent.sqlite",)),
    Entry("pi-agent", "kcost.readers.agents.pi_agent:PiAgent",
          "pi coding agent sessions (~/.pi/agent/sessions/--<cwd>--/<time>_<session>.jsonl)",
          Home("PI_CODING_AGENT_DIR", ("~/.pi/agent",), ("sessions",), "*.jsonl")),
    Entry("kilo", "kcost.readers.agents.kilo:Kilo",
          "Kilo CLI sessions (~/.local/share/kilo/kilo.db, and a channel's kilo-<channel>.db)",
          Home("KILO_DATA_DIR", ("${XDG_DATA_HOME:-~/.local/share}/kilo",), (".",), "kilo*.db", several=True)),
    Entry("goose", "kcost.readers.agents.goose:Goose",
          "Goose sessions (~/.local/share/goose/sessions/sessions.db: its usage ledger, or each session's totals)",
          Home("GOOSE_PATH_ROOT", ("${XDG_DATA_HOME:-~/.local/share}/goose",), ("sessions", "data/sessions"),
               "sessions.db")),
    # Cline's task folders in every VS Code-family editor's globalStorage (cline/cline `core/storage/disk.ts`) and
    # under `$CLINE_DIR/data` (`sdk/packages/shared/src/storage/paths.ts`: CLINE_DIR, else ~/.cline), with the SDK's
    # session folders; Roo Code's in the same editors' globalStorage and the Roo CLI's ~/.vscode-mock (Roo has no
    # variable: ROO_CODE_STORAGE_PATH names its `roo-cline.customStoragePath` setting's folders).
    Entry("cline", "kcost.readers.agents.cline:Cline",
          "Cline task folders (<VS Code user data>/User/globalStorage/saoudrizwan.claude-dev/tasks/<task>/, "
          "~/.cline/data/tasks/<task>/) and SDK sessions (~/.cline/data/sessions/<session>/)",
          Home("CLINE_DIR", ("~/.cline", *(f"{base}/{app}/User/globalStorage" for base in (
              "${XDG_CONFIG_HOME:-~/.config}", "~/Library/Application Support", "${APPDATA:-~/AppData/Roaming}")
              for app in ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")),
              "~/.vscode-server/data/User/globalStorage", "~/.cursor-server/data/User/globalStorage"),
              ("data/tasks", "data/sessions", "saoudrizwan.claude-dev/tasks", "saoudrizwan.cline-nightly/tasks"),
              "*messages.json"),
          folders=("ui_messages.json", "claude_messages.json", "api_conversation_history.json", "task_metadata.json",
                   "*.messages.json")),
    Entry("roo-code", "kcost.readers.agents.roo_code:RooCode",
          "Roo Code task folders (<VS Code user data>/User/globalStorage/rooveterinaryinc.roo-cline/tasks/<task>/)",
          Home("ROO_CODE_STORAGE_PATH", ("~/.vscode-mock/global-storage", *(
              f"{base}/{app}/User/globalStorage" for base in (
                  "${XDG_CONFIG_HOME:-~/.config}", "~/Library/Application Support", "${APPDATA:-~/AppData/Roaming}")
              for app in ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")),
              "~/.vscode-server/data/User/globalStorage", "~/.cursor-server/data/User/globalStorage"),
              ("rooveterinaryinc.roo-cline/tasks", "rooveterinaryinc.roo-code-nightly/tasks", "tasks"),
              "ui_messages.json", several=True),
          folders=("ui_messages.json", "claude_messages.json", "api_conversation_history.json", "task_metadata.json",
                   "history_item.json")),
    # Crush's global data folder as `GlobalConfigData` finds it (internal/config/load.go: CRUSH_GLOBAL_DATA, else
    # $XDG_DATA_HOME/crush, else %LOCALAPPDATA%/crush, else ~/.local/share/crush): its projects.json lists each
    # project's data folder (<project>/.crush/crush.db), read from there.
    Entry("crush", "kcost.readers.agents.crush:Crush",
          "Crush sessions (<project>/.crush/crush.db, each project listed in ~/.local/share/crush/projects.json)",
          Home("CRUSH_GLOBAL_DATA", ("${XDG_DATA_HOME:-~/.local/share}/crush",
                                     "${LOCALAPPDATA:-~/AppData/Local}/crush"), (".",), "projects.json"),
          folders=("crush.db", "projects.json")),
)  # fmt: skip
NAMES: tuple[str, ...] = tuple(e.name for e in READERS)
TURN_SPECS: tuple[Entry, ...] = (  # the turn-spec notations, read by kcost.readers.specs.turnspec
    Entry("yaml", "kcost.readers.specs.reader:Yaml", "a turn spec in YAML (.yaml, .yml)"),
    Entry("json", "kcost.readers.specs.reader:Json", "a turn spec in one JSON document"),
    Entry("jsonl", "kcost.readers.specs.reader:Jsonl", "a turn spec in JSON Lines, a turn a line"),
)
TURN_FORMATS: tuple[str, ...] = tuple(e.name for e in TURN_SPECS)
INPUT_FORMATS: tuple[str, ...] = ("auto", *TURN_FORMATS, *NAMES)  # the --input-format choices
DETECTION: tuple[Entry, ...] = (*TURN_SPECS, *READERS)  # every format, in the order detection tries them


def entry(name: str) -> Entry:
    for e in DETECTION:
        if e.name == name:
            return e
    raise KeyError(name)
