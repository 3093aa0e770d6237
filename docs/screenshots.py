"""The screenshots in the README: the lesson's session and the conversation trace's capacity curve, as
`--format html` draws them, taken in headless Chromium (Debian's `chromium`, driven by playwright).

Run from the repository: python docs/screenshots.py (the trace needs ../shared beside the repository).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHOTS = {  # paths relative to the repository, as a reader would type them
    "bill-lesson.png": ["bill", "sample_sessions/coding-400k.yaml"],
    "trace-conversation.png": [
        "trace",
        "../shared/traces/conversation_trace.jsonl",
        "--capacity",
        "1M,3M,10M,30M,inf",
        "--cache",
        "k3",
        "--cache",
        "ideal",
    ],  # fmt: skip
}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
        for name, args in SHOTS.items():
            page_file = Path(tmp) / (name + ".html")
            subprocess.run([sys.executable, "-m", "kcost", *args, "--format", "html", "-o", str(page_file)],
                           check=True, cwd=ROOT)  # fmt: skip
            page = browser.new_page(viewport={"width": 1100, "height": 800})
            page.goto(page_file.as_uri())
            page.screenshot(path=str(HERE / name), full_page=False)
            page.close()
            print(f"docs/{name}")
        browser.close()


if __name__ == "__main__":
    main()
