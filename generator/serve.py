"""A local preview: serve the output folder on 127.0.0.1 and rebuild when a source changes."""

from __future__ import annotations

import functools
import http.server
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import click

from .build import TEMPLATES_DIR, TRANSLATIONS_DIR, Options, build


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
    folders = [options.catalogs, options.content, TEMPLATES_DIR, TRANSLATIONS_DIR]
    if options.prices:
        folders.append(options.prices)
    stamp = source_stamp(folders)
    while True:
        time.sleep(interval)
        current = source_stamp(folders)
        if current != stamp:
            stamp = current
            rebuild(options)


def serve(options: Options, port: int) -> None:
    """Build, then serve the output folder until interrupted."""
    rebuild(options)
    threading.Thread(target=watch, args=(options,), daemon=True).start()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(options.out))
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as server:
        click.echo(f"serving {options.out} on http://127.0.0.1:{server.server_address[1]}/ (Ctrl+C to stop)")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
