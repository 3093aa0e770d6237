"""Docstrings and comments cite only files that exist: a path the code names (`docs/design/cache-model.md`,
`../../README.md`) is found in the repository, from its root or from the module's own folder."""

from __future__ import annotations

import re

from tests.conftest import ROOT

# a markdown file anywhere, or a path into one of the repository's own folders (or the old `notes/`)
CITED = re.compile(r"`((?:\.\./)*[\w.\-/]+\.md|(?:docs|kcost|tests|bench|sample_sessions|examples|notes)/[\w.\-/]+)`")


def test_every_file_the_code_cites_exists() -> None:
    missing = []
    for path in sorted([*(ROOT / "kcost").rglob("*.py"), *(ROOT / "kcost").rglob("*.c")]):
        for match in CITED.finditer(path.read_text(encoding="utf-8")):
            cited = match.group(1).split("#")[0]
            if not any(where.exists() for where in (ROOT / cited, path.parent / cited)):
                missing.append(f"{path.relative_to(ROOT)}: {cited}")
    assert not missing, "\n".join(missing)
