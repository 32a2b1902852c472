"""A local preview: serve the output folder on 127.0.0.1 and rebuild when a source changes."""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

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


def rebuild(options: Options) -> None:
    """Build once, reporting problems without stopping the preview."""
    try:
        result = build(options)
        click.echo(f"rebuilt: {result.summary.written} written, {result.summary.removed} removed in {result.seconds:.2f} s")
    except click.ClickException as error:
        click.echo(error.format_message(), err=True)


def watch(options: Options, interval: float = 0.5) -> None:
    """Rebuild whenever a catalog, content, template or translation file changes."""
    folders = [options.catalogs, options.content, options.templates, options.translations]
    if options.prices:
        folders.append(options.prices)
    stamp = source_stamp(folders)
    while True:
        time.sleep(interval)
        current = source_stamp(folders)
        if current != stamp:
            stamp = current
            rebuild(options)


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


def serve(options: Options, port: int) -> None:
    """Build, then serve the output folder until interrupted."""
    rebuild(options)
    threading.Thread(target=watch, args=(options,), daemon=True).start()
    with http_server(options.out, port, quiet=False) as server:
        click.echo(f"serving {options.out} on http://127.0.0.1:{server.server_address[1]}/ (Ctrl+C to stop)")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
