"""The preview's times (benchmarks/bench.py): `gpumem serve` on a copy of the project, one content
file edited and saved, timed from the save to the preview's report that its build is done (the
event its open pages listen to) and to the edited page fetched back with the new words.

Hand-written with the standard library: the preview speaks plain HTTP and server-sent events, and
its process's CPU time is in /proc (Linux), which is where the benchmark runs.
"""

from __future__ import annotations

import functools
import http.client
import json
import os
import queue
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

START_TIMEOUT = 300.0  # seconds for the first build (a large catalog on a loaded machine)
EDIT_TIMEOUT = 60.0
EDITED = "content/en/home.md"
WORDS = "Three questions"


@dataclass(frozen=True)
class PreviewTimes:
    """Per edit: seconds to the build's event and to the page fetched back, the preview process's
    CPU seconds (its forked renderers included) and the 1-minute load average."""

    built: list[float]
    reloaded: list[float]
    cpu: list[float]
    loads: list[float]

    @property
    def medians(self) -> tuple[float, float, float]:
        return statistics.median(self.built), statistics.median(self.reloaded), statistics.median(self.cpu)


def process_cpu(pid: int) -> float:
    """User + system seconds of a process and of its children it has waited for (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def _lines(stream: object, into: queue.Queue[tuple[float, str]]) -> None:
    """Every line of a stream, with the moment it arrived, until it ends."""
    for line in iter(stream.readline, b""):  # type: ignore[attr-defined]
        into.put((time.perf_counter(), line.decode(errors="replace").rstrip("\n")))


def _wait(lines: queue.Queue[tuple[float, str]], found: object, timeout: float) -> tuple[float, str]:
    """The first line for which `found(line)` holds, and when it arrived."""
    deadline = time.perf_counter() + timeout
    while True:
        moment, line = lines.get(timeout=max(0.0, deadline - time.perf_counter()))
        if found(line):  # type: ignore[operator]
            return moment, line


def _newer(generation: int, line: str) -> bool:
    """Whether an event stream's line reports a build after `generation`."""
    return line.startswith("data: ") and json.loads(line[6:])["generation"] > generation


def _page(port: int, path: str) -> str:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=EDIT_TIMEOUT)
    connection.request("GET", path)
    body = connection.getresponse().read().decode()
    connection.close()
    return body


def preview_times(project: Path, root: Path, runs: int) -> PreviewTimes:
    """Start the preview on root's catalogs and content, edit EDITED `runs` times, and stop it."""
    command = [sys.executable, "-m", "gpumem", "--project", str(project), "serve"]
    command += ["--catalogs", str(root / "catalogs"), "--content", str(root / "content"), "--port", "0"]
    env = {**os.environ, "GPUMEM_CACHE": str(root / "preview-cache")}
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    said: queue.Queue[tuple[float, str]] = queue.Queue()
    threading.Thread(target=_lines, args=(server.stdout, said), daemon=True).start()
    try:
        _, line = _wait(said, lambda text: text.startswith("serving "), START_TIMEOUT)
        port = int(line.split("http://127.0.0.1:", 1)[1].split("/", 1)[0])
        _wait(said, lambda text: text.startswith("rebuilt: "), START_TIMEOUT)  # it listens before its first build
        events = http.client.HTTPConnection("127.0.0.1", port, timeout=START_TIMEOUT)
        events.request("GET", "/__gpumem/events")
        stream: queue.Queue[tuple[float, str]] = queue.Queue()
        threading.Thread(target=_lines, args=(events.getresponse(), stream), daemon=True).start()
        generation = json.loads(_wait(stream, lambda text: text.startswith("data: "), EDIT_TIMEOUT)[1][6:])["generation"]
        return _edits(server.pid, port, root / EDITED, stream, generation, runs)
    finally:
        server.send_signal(signal.SIGTERM)  # the preview removes its folder and stops
        server.wait(timeout=60)


def _edits(pid: int, port: int, path: Path, stream: queue.Queue[tuple[float, str]], generation: int, runs: int) -> PreviewTimes:
    """Each edit saved, then the preview's event and the page fetched back, timed from the save."""
    original = path.read_text()
    times = PreviewTimes([], [], [], [])
    for run in range(runs):
        time.sleep(0.5)  # the watcher idle again: each save is a change of its own
        words = f"{WORDS} (preview {run + 1})"
        cpu, started = process_cpu(pid), time.perf_counter()
        path.write_text(original.replace(WORDS, words, 1))
        moment, line = _wait(stream, functools.partial(_newer, generation), EDIT_TIMEOUT)
        state = json.loads(line[6:])
        if state["error"] is not None:
            raise RuntimeError(f"the preview's build failed: {state['error']}")
        generation = state["generation"]
        if words not in _page(port, "/en/"):
            raise RuntimeError("the preview served the page without the edit")
        times.reloaded.append(time.perf_counter() - started)
        times.built.append(moment - started)
        times.cpu.append(process_cpu(pid) - cpu)
        times.loads.append(os.getloadavg()[0])
    path.write_text(original)
    return times
