from collections.abc import Callable, Sequence
from typing import Any

class Beyond(ArithmeticError): ...

Atto = tuple[int, int]  # whole dollars, and 1e-18 dollars
# tokens at one set of rates: hit, missed, output, prompt, written at 5 minutes and at an hour, whether a write
# was priced at each, and the missed tokens by cause
Counted = tuple[int, int, int, int, int, int, bool, bool, tuple[tuple[str, int], ...]]

class Writer:
    def __init__(
        self, charged: bool, hour: bool, times: Callable[[float], str | None], floats: Callable[[float], str]
    ) -> None: ...
    def rates(self, hit: Atto, miss: Atto, output: Atto, five: Atto, hour: Atto) -> int: ...
    def turn(
        self,
        number: int,
        label: str | None,
        prompt: int,
        hit: int,
        output: int,
        misses: Sequence[Any] | None,
        time: float | None,
        model: str | None,
        priced: str | None,
        stored: int,
        kept_1h: int | None,
        check: Any,
        rates: int,
    ) -> str: ...
    def sums(self) -> tuple[int, int, int, int, int, tuple[Counted, ...]]: ...
