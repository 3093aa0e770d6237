"""kcost's version, in one place: the package face, the bills' `generator` and `kcost --version` read it."""

__version__ = "0.1.0"
