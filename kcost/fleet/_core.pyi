from typing import Any

from kcost.fleet.core import CoreOptions

def replay(options: CoreOptions) -> list[list[tuple[Any, ...] | None] | None] | None: ...
