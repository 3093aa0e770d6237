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
    wanted = {min(turn_start, cap), cap}
    if step:
        wanted.update(range((hit // step + 1) * step, cap + 1, step))
    return sorted(b for b in wanted if b > hit)
