"""The domain types every stage shares: calls and usage as logs record them (`calls`), the requests and spans a
prompt becomes and a cache run's outcome (`requests`), a session of call records (`session`), the causes of misses
(`causes`), budgets (`budgets`), the bounds every number keeps (`bounds`), K3's own figures (`k3`), and the frozen
dataclass they are made with (`frozen`). No I/O, nothing of any stage above."""
