"""`kcost watch`: a running session followed as its log grows, each new turn with its cost and cause.

`frames` is the loop, with no terminal in it: it looks at each log every `interval` seconds through
`incremental.Tail`, bills the session as `kcost bill` bills it, and yields a `Frame` whenever a log grew (and
once at the start). The command (`kcost.cli.live`) draws the frames with rich on a terminal, or prints
`turn_line` for each new turn when piped. Budgets come from the settings (`kcost.toml`'s `[budgets]`): a
warning when the session's total, a turn, or its hit rate is about to cross one. Each look's figures are kept in
the ledger as the status line keeps its own (`statusline.remember`): a status line on the log as watch last saw it
reads nothing.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

from kcost.errors import InputError
from kcost.live.clock import Figures, figures
from kcost.model.frozen import frozen

if TYPE_CHECKING:
    from kcost.api.settings import Settings
    from kcost.live.limits import Standing
    from kcost.results import TurnBill

NEAR = Decimal("0.9")  # a budget is "about to be crossed" at 90% of it, or when the next cold turn would cross it


@frozen
class Watched:
    """One session as last seen: its log, its turns, its figures, and what its budgets say."""

    path: str
    turns: tuple[TurnBill, ...]
    figures: Figures
    new: int  # turns new since the frame before
    warnings: tuple[str, ...] = ()


@frozen
class Frame:
    number: int
    sessions: tuple[Watched, ...] = field(default_factory=tuple)
    window: Standing | None = None  # the usage window across sessions, where a limit is set (`kcost.live.limits`)
    warned: tuple[str, ...] = ()  # the window's warnings said first at this frame


def newest_session() -> str:
    """The agent log on this machine written to last (the session running now, most likely)."""
    from kcost.readers.homes import places

    folders, looked = places()
    best: tuple[float, str] | None = None
    for folder in folders:
        for file in folder.path.rglob(folder.files):
            try:
                when = file.stat().st_mtime
            except OSError:
                continue
            if file.is_file() and (best is None or when > best[0]):
                best = (when, str(file))
    if best is None:
        raise InputError("no agent log found", source=", ".join(str(p) for p in looked[:3]) or None,
                         hint="give a log's path")  # fmt: skip
    return best[1]


def frames(
    paths: Sequence[str],
    settings: Settings,
    *,
    interval: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
    wait: bool = True,
    beat: bool = False,
) -> Iterator[Frame]:
    """A frame at the start, then one each time a log grows (looked at every `interval` seconds) or, with a window's
    limit, the window reaches a share of it not warned of (others' spending too); with `beat`, one at every look (a
    session that did not grow with no new turns), so a clock drawn from it counts down.
    `wait`: a log with no call in it yet (or a line that cannot be read yet) is looked at again, not an error."""
    from dataclasses import replace

    from kcost.live.incremental import Tail

    for path in paths:  # a folder, a FIFO or a device is no log however long it is waited on
        if os.path.exists(path) and not os.path.isfile(path):
            raise InputError("not a regular file: give a log's path", source=path)
    unique = list({os.path.realpath(p): p for p in reversed(paths)}.values())[::-1]  # a log named twice: once
    tails = [Tail(p, settings.prompts) for p in unique]
    shown: dict[str, Watched] = {}
    said: dict[str, object] = {}  # the shares of the window's limit warned of (`limits.news`)
    number = 0
    while True:
        changed = False
        for tail in tails:
            try:
                if tail.advance(settings) or tail.path not in shown:
                    shown[tail.path] = _look(tail, settings, shown.get(tail.path))
                    changed = True
                elif shown[tail.path].new:
                    shown[tail.path] = replace(shown[tail.path], new=0)  # its new turns were shown
            except InputError:
                if not wait:
                    raise
        if len(shown) == len(tails) and (changed or beat or settings.window.limit is not None):
            # with a limit, every look weighs the window: other sessions' spending may reach a share of it
            window, warned = _window([shown[t.path] for t in tails], settings, said)
            if changed or beat or warned:
                number += 1
                yield Frame(number, tuple(shown[t.path] for t in tails), window, warned)
        sleep(interval)


def _window(watched: list[Watched], settings: Settings, said: dict[str, object]) -> tuple[Standing | None,
                                                                                         tuple[str, ...]]:  # fmt: skip
    """The usage window over the sessions watched and every other a live view keeps in the ledger, where a limit is
    set; and the warnings of the shares of it reached since the last frame that warned (`said`, updated)."""
    if settings.window.limit is None:
        return None, ()
    from kcost.live import limits
    from kcost.live.clock import now
    from kcost.live.statusline import ledger_of, log_key

    others = limits.kept(ledger_of(settings), [log_key(w.path) for w in watched])
    stand = limits.standing(limits.calls([w.figures for w in watched], others), settings, now())
    if stand is None:
        return None, ()
    new, record = limits.news(stand, said)
    said.clear()
    said.update(record)
    return stand, tuple(stand.warnings(new))


def _look(tail: object, settings: Settings, before: Watched | None) -> Watched:
    from kcost import api
    from kcost.live.incremental import Tail

    assert isinstance(tail, Tail)
    session = tail.built(settings)
    bill = api.bill(session, settings=settings)
    seen = len(before.turns) if before is not None else 0
    result = figures(session, bill, settings)
    if tail.seen is not None:  # kept in the ledger as the status line keeps its line: a call on the log as it is
        from kcost.live.statusline import remember  # answers from it, reading nothing

        remember(tail.path, result, tail.seen, settings)
    return Watched(tail.path, tuple(bill.turns), result, max(len(bill.turns) - seen, 0), _warnings(result, settings))


def _warnings(f: Figures, settings: Settings) -> tuple[str, ...]:
    from kcost.render.display import money, percent

    b = settings.budgets
    if b is None:
        return ()
    out = []
    if b.max_session_usd is not None:
        limit = b.max_session_usd
        if f.total > limit:
            out.append(f"over the session budget of {money(limit, total=True)}")
        elif f.total >= limit * NEAR or f.total + f.cold_next > limit:
            out.append(f"the session budget of {money(limit, total=True)} is near: "
                       f"{money(limit - f.total, total=True)} left")  # fmt: skip
    if b.max_turn_usd is not None and f.cold_next > b.max_turn_usd:
        out.append(f"a turn sent after the cache expires ({money(f.cold_next)}) crosses the turn budget of "
                   f"{money(b.max_turn_usd)}")  # fmt: skip
    if b.min_hit_rate is not None and f.hit_rate < float(b.min_hit_rate):
        out.append(f"hit rate {percent(f.hit_rate)} is under the budget's {percent(float(b.min_hit_rate))}")
    return tuple(out)


def turn_line(path: str, turn: TurnBill) -> str:
    """One new turn, for a pipe: `name  turn 12  $0.1234  new-input  total $3.21`."""
    from kcost.render.display import money

    return (f"{Path(path).stem[:24]}  turn {turn.turn}  {turn.time or '-'}  {money(turn.total)}  {turn.reason}  "
            f"total {money(turn.cumulative, total=True)}")  # fmt: skip
