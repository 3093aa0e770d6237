"""The readers' tests' shared fixture: `home`, an empty home (a test module may lay one out its own way)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.readers.helpers import empty_home


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return empty_home(tmp_path, monkeypatch)
