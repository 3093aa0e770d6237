"""The compiled replay core, from Python: placeholder until the C core lands."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kcost.fleet.replay import ClusterTally, Run


def replay_compiled(
    path: str, runs: Sequence[Run], only: set[int] | None, progress: Callable[[int], None] | None
) -> list[list[ClusterTally]] | None:
    return None
