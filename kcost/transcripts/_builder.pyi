from collections.abc import Callable
from typing import Any

class Builder:
    parts: Any
    def __init__(self, parts: Any, header: int) -> None: ...
    def add(self, call: Any) -> Any: ...
    def attach(self, call: Any) -> int | None: ...

def setup(
    shape: type,
    fields: tuple[str, ...],
    assistant_body: Callable[..., Any],
    message: Callable[..., Any],
    made_head: Callable[..., Any],
    changed: Callable[..., Any],
    where: type,
    generation: Any,
    message_fields: tuple[str, ...],
    call_fields: tuple[str, ...],
) -> None: ...
