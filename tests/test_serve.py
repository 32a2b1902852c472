"""The preview server: builds into a folder of its own, serves it on 127.0.0.1, rebuilds when a
source changes, and outlives every error."""

from __future__ import annotations

import queue
import re
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from gpumem import serve

from .conftest import edit, line_of, options_for
from .project import REPO

WAIT = 90  # seconds: a build takes about 1 s, several on a busy machine
REQUEST_LOG = re.compile(r'^127\.0\.0\.1 - - \[[^]]+\] "GET [^"]*" \d+ -\n', re.MULTILINE)


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


class Server:
    """`gpumem serve` in a subprocess, its stdout read line by line and its stderr from a file."""

    def __init__(self, inputs: Path) -> None:
        command = [
            sys.executable,
            "-u",
            "-m",
            "gpumem.cli",
            "--project",
            str(REPO),
            "serve",
            "--catalogs",
            "catalogs",
            "--content",
            "content",
        ]
        self.errors = inputs / "serve-errors.txt"
        with self.errors.open("w") as stderr:
            self.process = subprocess.Popen([*command, "--port", "0"], cwd=inputs, stdout=subprocess.PIPE, stderr=stderr, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.seen = 0  # characters of stderr already looked at

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def line(self) -> str:
        return self.lines.get(timeout=WAIT)

    def new_errors(self, ending: str) -> str:
        """The stderr written since the last call, once it ends with `ending`, without the request log."""
        deadline = time.monotonic() + WAIT
        while True:
            text = self.errors.read_text()[self.seen :]
            if REQUEST_LOG.sub("", text).endswith(ending):
                self.seen += len(text)
                return REQUEST_LOG.sub("", text)
            assert time.monotonic() < deadline, f"stderr so far: {text!r}"
            time.sleep(0.05)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=WAIT)


def test_serve_rebuilds_when_content_changes_and_outlives_bad_input(inputs):
    server = Server(inputs)
    try:
        first = server.line()
        assert first.startswith("rebuilt: 317 written, 0 removed in ")
        serving = server.line()
        assert serving.startswith("serving ") and " on http://127.0.0.1:" in serving
        preview = Path(serving.removeprefix("serving ").split(" on ")[0])
        assert preview.name == "site" and preview.parent.name.startswith("gpumem-preview-") and preview.is_dir()
        base = serving.split(" on ")[1].split(" ")[0]
        assert "Three questions come up" in fetch(base + "en/")
        home = inputs / "content/en/home.md"

        edit(home, "Three questions come up", "Three {{ questions come up")  # a Jinja syntax error
        line = line_of(home, "Three {{ questions")
        assert server.new_errors("written.\n") == (
            f"content/en/home.md:{line}: template: expected token 'end of print statement', got 'come'\n1 problem found; nothing was written.\n"
        )
        assert "Three questions come up" in fetch(base + "en/")  # still serving the last good build

        (inputs / "catalogs/gpus.yaml").rename(inputs / "gpus.yaml")  # a catalog file gone
        assert (
            server.new_errors("written.\n")
            == "catalogs/gpus.yaml: cannot read: No such file or directory\n1 problem found; nothing was written.\n"
        )
        assert "Three questions come up" in fetch(base + "en/")

        edit(home, "Three {{ questions come up", "Three questions always come up")
        assert (
            server.new_errors("written.\n")
            == "catalogs/gpus.yaml: cannot read: No such file or directory\n1 problem found; nothing was written.\n"
        )
        (inputs / "gpus.yaml").rename(inputs / "catalogs/gpus.yaml")
        assert server.line().startswith("rebuilt: 1 written, 0 removed in ")
        assert "Three questions always come up" in fetch(base + "en/")
        assert server.process.poll() is None
        assert not (inputs / "site").exists()  # the preview never touches the project's output folder
    finally:
        server.stop()
    assert not preview.parent.exists()  # its own folder is removed at exit
    assert REQUEST_LOG.sub("", server.errors.read_text()[server.seen :]) == ""


def test_the_watcher_outlives_an_unexpected_error_and_rebuilds_on_the_next_save(inputs, monkeypatch, capsys):
    options = options_for(inputs, out=inputs / "preview")
    real = serve.build
    calls: list[str] = []

    def crashing_once(options, now=None, report=None):  # noqa: ANN001, ANN202
        calls.append("build")
        if calls.count("build") == 1:
            raise RuntimeError("a bug nobody expected")
        return real(options, now, report)

    stamp = serve.source_stamp

    def flaky_stamp(folders):  # noqa: ANN001, ANN202
        calls.append("stamp")
        if calls.count("stamp") == 2:
            raise FileNotFoundError(2, "No such file or directory", "content/en/gone.md")
        return stamp(folders)

    monkeypatch.setattr(serve, "build", crashing_once)
    monkeypatch.setattr(serve, "source_stamp", flaky_stamp)
    stop = threading.Event()
    watcher = threading.Thread(target=serve.watch, args=(options, 0.05), kwargs={"stop": stop})
    watcher.start()
    said = ""

    def wait_for(text: str) -> None:
        nonlocal said
        deadline = time.monotonic() + WAIT
        while text not in said:
            captured = capsys.readouterr()
            said += captured.out + captured.err
            assert time.monotonic() < deadline, said
            time.sleep(0.05)

    try:
        wait_for("unexpected error while watching the sources (the preview keeps running; the next save rebuilds):\n")
        assert "FileNotFoundError: [Errno 2] No such file or directory: 'content/en/gone.md'\n" in said
        edit(inputs / "content/en/home.md", "Three questions", "Three other questions")
        wait_for("unexpected error while rebuilding (the preview keeps running; the next save rebuilds):\n")
        wait_for("RuntimeError: a bug nobody expected\n")
        assert watcher.is_alive()
        edit(inputs / "content/en/home.md", "Three other questions", "Three more questions")
        wait_for("rebuilt: 317 written, 0 removed in ")
        assert "Three more questions" in (inputs / "preview/en/index.html").read_text()
    finally:
        stop.set()
        watcher.join(timeout=WAIT)
    assert not watcher.is_alive()
