"""Prices: the shipped snapshot of every provider's rates (`data/`) loaded and validated (`prices`), the charges of
one turn and a session's sums (`charges`), and the providers, each one module with its cache rule and usage fields
(`providers`)."""
