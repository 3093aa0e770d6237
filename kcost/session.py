"""A session as readers hand it on to the simulator: its requests, and what the bill shows about them."""

from __future__ import annotations

from dataclasses import dataclass

from kcost.cache.simulator import Request
from kcost.transcripts.calls import Usage


@dataclass(frozen=True)
class Session:
    """What a reader hands on: requests for the simulator, and what the bill shows about them."""

    source: str
    name: str
    model: str | None
    requests: tuple[Request, ...]
    labels: tuple[str | None, ...]  # one per billed request
    warm_prefix: int = 0  # tokens cached before the first billed request
    model_line: int | None = None  # where the session names its model, for a price-lookup error
    reported: tuple[Usage | None, ...] = ()  # what the log says each billed request cost, where it says
    token_counts: str = "turn spec"  # where the token counts come from
    notes: tuple[str, ...] = ()  # what the reader skipped, guessed or could not check
    comparable: bool = True  # reported cache hits can be set beside simulated ones (a Kimi provider's, not another's)
    changes: tuple[tuple[str, str] | None, ...] = ()  # per request: (cause, detail) of how its prompt differs
    times: tuple[float | None, ...] = ()  # per billed request: when it was made (Unix seconds), where logged
    call_models: tuple[str | None, ...] = ()  # per billed request: the model the log names
    sized: tuple[int, int] = (0, 0)  # calls sized from their logged usage, calls sized by estimate

    @property
    def logged_models(self) -> tuple[str, ...]:
        """The models the log names, in order of first use."""
        return tuple(dict.fromkeys(m for m in self.call_models if m))

    @property
    def span(self) -> tuple[float | None, float | None]:
        """The first and last logged time."""
        when = [t for t in self.times if t is not None]
        return (min(when), max(when)) if when else (None, None)
