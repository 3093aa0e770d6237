from collections.abc import Callable
from typing import Any

def walk(
    shapes: list[Any],
    estimates: list[int],
    numerator: int,
    denominator: int,
    given: dict[str, int] | None,
    changed: Callable[[str, int], Any],
) -> tuple[Any, ...] | None: ...
def setup(request: type, request_fields: tuple[str, ...], span: type, span_fields: tuple[str, ...]) -> None: ...
