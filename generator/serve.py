"""A local preview: build into a temporary folder of its own, serve it on 127.0.0.1, and rebuild
when a source changes.

The preview never writes the project's output folder (`site/`), so it cannot collide with
`gpumem build`; its folder is created at start and removed at exit (Ctrl+C or SIGTERM). The
watcher outlives any error: bad input or an unexpected exception is printed, the last good build
stays on show, and the next save rebuilds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import http.server
import shutil
import signal
import tempfile
import threading
import traceback
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import FrameType

import click

from .build import Options, build


def source_stamp(folders: Iterable[Path]) -> tuple[tuple[str, float], ...]:
    """Every source file's path and modification time, to notice any change."""
    found = []
    for folder in folders:
        if folder.is_file():
            found.append((str(folder), folder.stat().st_mtime))
        elif folder.is_dir():
            found.extend((str(p), p.stat().st_mtime) for p in sorted(folder.rglob("*")) if p.is_file())
    return tuple(found)


def say(note: str) -> None:
    click.echo(note, err=True)


def unexpected(when: str) -> None:
    """Print the exception being handled, whole, and that the preview goes on."""
    click.echo(f"unexpected error {when} (the preview keeps running; the next save rebuilds):", err=True)
    click.echo(traceback.format_exc().rstrip(), err=True)


def rebuild(options: Options) -> None:
    """Build once, reporting any problem or error without stopping the preview."""
    try:
        result = build(options, report=say)
        click.echo(f"rebuilt: {result.summary.written} written, {result.summary.removed} removed in {result.seconds:.2f} s")
    except click.ClickException as error:
        click.echo(error.format_message(), err=True)
    except Exception:  # noqa: BLE001 - whatever goes wrong, the preview goes on
        unexpected("while rebuilding")


def watch(options: Options, interval: float = 0.5, stop: threading.Event | None = None) -> None:
    """Rebuild whenever a catalog, content, template or translation file changes, until stop is set.

    Every error is printed and watching goes on: a failed build is retried on the next change.
    """
    folders = [options.catalogs, options.content, options.templates, options.translations]
    if options.prices:
        folders.append(options.prices)
    stop = stop or threading.Event()
    stamp: tuple[tuple[str, float], ...] | None = None
    with contextlib.suppress(Exception):
        stamp = source_stamp(folders)
    while not stop.wait(interval):
        try:
            current = source_stamp(folders)
            if current != stamp:
                stamp = current
                rebuild(options)
        except Exception:  # noqa: BLE001 - a file that vanished while being listed, say
            unexpected("while watching the sources")


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves files without logging every request."""

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass


def http_server(folder: Path, port: int = 0, quiet: bool = True) -> http.server.ThreadingHTTPServer:
    """An HTTP server for a folder on 127.0.0.1 (port 0: any free port)."""
    handler = QuietHandler if quiet else http.server.SimpleHTTPRequestHandler
    return http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(handler, directory=str(folder)))


@contextlib.contextmanager
def served(folder: Path) -> Iterator[str]:
    """A folder served in a background thread while the block runs; yields its origin."""
    server = http_server(folder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # SIGTERM stops the preview as Ctrl+C does, cleaning up


def serve(options: Options, port: int) -> None:
    """Build into a temporary folder, serve it until interrupted, then remove it.

    options.out is not used: the preview has its own folder, so `gpumem build` can run meanwhile.
    """
    scratch = Path(tempfile.mkdtemp(prefix="gpumem-preview-"))
    preview = scratch / "site"
    preview.mkdir()
    options = dataclasses.replace(options, out=preview)
    stop = threading.Event()
    watcher = threading.Thread(target=watch, args=(options,), kwargs={"stop": stop}, daemon=True)
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        rebuild(options)
        watcher.start()
        with http_server(preview, port, quiet=False) as server:
            click.echo(f"serving {preview} on http://127.0.0.1:{server.server_address[1]}/ (Ctrl+C to stop)")
            with contextlib.suppress(KeyboardInterrupt):
                server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        if watcher.is_alive():
            watcher.join(timeout=30)  # let a rebuild under way end before its folder goes
        shutil.rmtree(scratch, ignore_errors=True)
        signal.signal(signal.SIGTERM, previous)
