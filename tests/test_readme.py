"""The README's Python example runs as written, from the repository's root."""

from __future__ import annotations

import contextlib
import io
from decimal import Decimal

import pytest

from tests.conftest import ROOT


def test_library_example_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    text = (ROOT / "README.md").read_text()
    code = text.split("## As a library", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(ROOT)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    assert Decimal(out.getvalue().strip()) == Decimal("6.61728")


def test_settings_example_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The second example: settings resolved as the CLI resolves them, then the API's calls."""
    text = (ROOT / "README.md").read_text()
    code = text.split("## As a library", 1)[1].split("```python", 2)[2].split("```", 1)[0]
    monkeypatch.chdir(ROOT)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    expected = code.split("# ")[-1].strip()
    assert out.getvalue().strip() == expected
