"""K3's hit cap and checkpoint placement (`docs/design/cache-model.md` sections 2 and 3), written once for both
simulators: the session simulator counts positions in tokens, the fleet's in 512-token blocks (a unit of 1)."""

from __future__ import annotations


def hit_cap(length: int, block: int) -> int:
    """The furthest a hit may reach in a prompt of `length` tokens: a whole number of `block`-token blocks, and
    never the last token (one prompt token is always computed, for the logits)."""
    return (length - 1) // block * block


def kept_checkpoints(turn_start: int, cap: int, hit: int, step: int | None) -> list[int]:
    """Where a request keeps KDA checkpoints, in order: at the start of its newest turn and at its end (both at
    most `cap`), and every `step` past what it hit; only past `hit`, the part it computed. All positions are
    block boundaries (`turn_start` rounded down to one)."""
    wanted = set(kept_points(turn_start, cap, hit))
    run = kept_run(cap, hit, step) if step else None
    if run is not None:
        wanted.update(range(run[0], run[1] + 1, step))  # type: ignore[arg-type]
    return sorted(wanted)


def kept_points(turn_start: int, cap: int, hit: int) -> list[int]:
    """The checkpoints a request keeps at its turn boundaries: the start of its newest turn and its end."""
    start = turn_start if turn_start < cap else cap
    if start == cap:
        return [cap] if cap > hit else []
    return [b for b in (start, cap) if b > hit]


def kept_run(cap: int, hit: int, step: int) -> tuple[int, int] | None:
    """The first and last of the checkpoints a request keeps every `step` past `hit` (every multiple of `step`
    between them is one), or None if it keeps none."""
    first, last = (hit // step + 1) * step, cap // step * step
    return (first, last) if first <= last else None
