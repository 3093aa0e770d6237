"""Turn specs: the pydantic models that validate kcost's own input format (token counts per turn).

They reject unknown fields (a typo must not silently change a bill). Sessions between reader and simulator are
`kcost.model.session`; bills are `kcost.results`.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, WithJsonSchema, field_validator, model_validator

from kcost.cache.model import DURATION, parse_duration
from kcost.errors import InputError
from kcost.model.bounds import MAX_TOKENS, MAX_TURNS

# ---- turn specs (input) ------------------------------------------------------------------------------


class PreviousOutput(str, Enum):
    FULL = "full"  # reasoning and content, as K3 requires
    CONTENT = "content"  # the reasoning dropped
    NONE = "none"  # nothing of the previous output


Tokens = Annotated[int, Field(ge=0, le=MAX_TOKENS, strict=True)]


class Turn(BaseModel):
    """One turn (or `repeat` identical turns) of a session."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    new: Tokens = Field(0, description="New input tokens this turn appends (the user message, tool results).")
    output: Tokens = Field(0, description="Tokens the model generates this turn, reasoning included.")
    reasoning: Tokens = Field(0, description="How many of the output tokens are reasoning (they come first).")
    previous_output: PreviousOutput = Field(
        PreviousOutput.FULL,
        description="What of the previous turn's output is sent back: full, content, none.",
    )
    keep: Tokens | None = Field(
        None,
        description="Keep only the first N tokens of what is carried over (the previous prompt and output): "
        "a truncation or compaction; everything after is dropped.",
    )
    edit_at: Tokens | None = Field(
        None,
        description="The carried-over tokens from this position on are changed (an edited or reordered "
        "message): same length, new to the cache.",
    )
    strip_reasoning: bool = Field(
        False,
        description="The harness removes reasoning from earlier assistant messages (K2-style history): the "
        "prompt changes at the first reasoning it carried, and everything after it is new to the cache.",
    )
    idle: Annotated[
        float,
        WithJsonSchema({"anyOf": [{"type": "number", "minimum": 0}, {"type": "string", "pattern": DURATION}]}),
    ] = Field(0, description="Seconds idle before this turn, or a duration: 90s, 30m, 1.5h.")
    repeat: int = Field(1, ge=1, le=MAX_TURNS, strict=True, description="Run this turn N times.")
    label: str | None = Field(None, description="A name for the turn, shown in the bill.")

    @field_validator("idle", mode="before")
    @classmethod
    def _duration(cls, value: object) -> object:
        if isinstance(value, bool):
            raise ValueError("must be seconds or a duration like 90s, 30m")
        if isinstance(value, (int, float, str)):
            try:
                seconds = parse_duration(value, field="idle")
            except InputError as exc:
                raise ValueError(exc.message) from None
            if seconds is None:
                raise ValueError("must be a finite duration")
            return seconds
        return value

    @field_validator("reasoning")
    @classmethod
    def _reasoning_in_output(cls, value: int, info: ValidationInfo) -> int:
        output = info.data.get("output", 0)
        if value > output:
            raise ValueError(f"reasoning ({value}) cannot exceed output ({output})")
        return value


class Prefix(BaseModel):
    """Tokens at the front of the first prompt: a system prompt, tools, a repository's context."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    tokens: Tokens = Field(description="Length of the prefix in tokens.")
    warm: bool = Field(
        False, description="Already cached when the session starts (sent by an earlier request, unbilled)."
    )


class SessionSpec(BaseModel):
    """A session as token counts per turn: kcost's turn-spec format (YAML, JSON, or JSONL with a header)."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="kcost turn spec", defer_build=True)

    version: Literal[1] = Field(1, description="Turn-spec format version.")
    name: str | None = Field(None, description="Session name shown in the bill (default: the file name).")
    model: str | None = Field(None, description="Model to price at (default: the price table's default).")
    prefix: Prefix | None = None
    turns: list[Turn] = Field(min_length=1)

    @model_validator(mode="after")
    def _bounded(self) -> SessionSpec:
        total = sum(t.repeat for t in self.turns)
        if total > MAX_TURNS:
            raise ValueError(f"{total:,} turns, repeats counted: a session has at most {MAX_TURNS:,}")
        return self
