from kcost.cache.simulator import MissPart, Outcome, Reason, Request

class Simulator:
    def __init__(
        self,
        block: int,
        step: int,
        hit_step: int,
        min_tokens: int,
        anywhere: bool,
        none: bool,
        output: bool,
        ttl: float | None,
    ) -> None: ...
    def run(self, request: Request) -> Outcome: ...

def setup(outcome: type[Outcome], miss_part: type[MissPart], reasons: tuple[Reason, ...]) -> None: ...
