from collections.abc import Callable
from typing import Any

def scan(
    data: bytes,
    after: int,
    usage_of: Callable[[bytes], Any],
    time_of: Callable[[str], float | None],
    loads: Callable[[bytes], Any],
    max_count: int,
    main: str,
    prompts: bool = False,
    user_of: Callable[[Any], tuple[Any, ...]] | None = None,
    merge: Callable[[Any, Any], Any] | None = None,
    replied: Callable[[Any, str, str, tuple[tuple[str, str, str], ...]], Any] | None = None,
) -> tuple[list[tuple[Any, ...]], int, int, int] | None: ...
def setup(message: type, message_fields: tuple[str, ...], call: type, call_fields: tuple[str, ...]) -> None: ...
