from collections.abc import Callable
from typing import Any

def replay(
    path: str,
    runs: tuple[tuple[Any, ...], ...],
    only: tuple[int, ...] | None,
    primary: Callable[[str], int] | None,
    fallback: Callable[[str, str, list[int]], int],
    progress: Callable[[int], None] | None,
    exact_times: int,
    log_gamma: float,
    hash_block: int,
    affinity: int,
    max_tokens: int,
    max_line: int,
    threads: int = ...,
    chunk: int = ...,
) -> list[list[tuple[Any, ...]]] | None: ...
