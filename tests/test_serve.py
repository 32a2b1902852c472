"""The preview server: serves the build on 127.0.0.1 and rebuilds when a source changes."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request

from .conftest import edit
from .project import REPO


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.read().decode()


def test_serve_rebuilds_when_content_changes(inputs):
    command = [sys.executable, "-u", "-m", "gpumem.cli", "--project", str(REPO), "serve", "--catalogs", "catalogs", "--content", "content"]
    server = subprocess.Popen([*command, "--out", "site", "--port", "0"], cwd=inputs, stdout=subprocess.PIPE, text=True)
    try:
        lines = [server.stdout.readline(), server.stdout.readline()]
        assert lines[0].startswith("rebuilt: 307 written, 0 removed in ")
        assert lines[1].startswith("serving ") and "http://127.0.0.1:" in lines[1]
        base = lines[1].split(" on ")[1].split(" ")[0]
        assert "Three questions come up" in fetch(base + "en/")
        edit(inputs / "content/en/home.md", "Three questions come up", "Three questions always come up")
        assert server.stdout.readline().startswith("rebuilt: 1 written, 0 removed in ")
        deadline = time.monotonic() + 5
        while "Three questions always come up" not in fetch(base + "en/"):
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        server.terminate()
        server.wait(timeout=5)
