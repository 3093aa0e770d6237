"""Answers made from bills and prices: why misses cost what they cost and what fixes save (`explain`, `fixes`),
the same sessions on other providers (`compare`), bills grouped (`overview`), the lesson's arithmetic
(`quotes`), budgets checked and bills compared (`checks`), and self-hosting arithmetic (`selfhost`, its data in
`data/`). Each builds a report; none renders."""
