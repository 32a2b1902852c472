"""A local preview: build into a temporary folder of its own, serve it on 127.0.0.1, rebuild when a
source changes, and reload the open browser tabs.

The preview never writes the project's output folder (`site/`), so it cannot collide with
`gpumem build`; its folder is created at start and removed at exit (Ctrl+C or SIGTERM), and
written in place (tree.write_in_place): no one else reads or writes it. Its process keeps what the
last build made (build.Session): a content edit renders its page alone, and the figures are
computed again only when what they are made of changes. The watcher outlives any error: bad input
or an unexpected exception is printed, shown in the open pages, the last good build stays on
show, and the next save rebuilds. Pages are given a few lines of script as they are served (never
in the files): they listen to server-sent events and reload after each good build.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import http
import http.server
import json
import shutil
import signal
import tempfile
import threading
import traceback
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

import click

from gpumem.commands.build import Session, build
from gpumem.commands.watch import POLL, Sources
from gpumem.errors import BuildError
from gpumem.options import Options

EVENTS = "/__gpumem/events"
# Reload when the site was rebuilt since this page was served; show a failed build's message.
RELOAD_SCRIPT = """<script>(function(){var g=%d,s=new EventSource("%s");s.onmessage=function(e){
var d=JSON.parse(e.data),o=document.getElementById("gpumem-error");
if(d.error===null){if(d.generation!==g)location.reload();else if(o)o.remove();return}
if(!o){o=document.createElement("pre");o.id="gpumem-error";o.setAttribute("role","alert");
o.style.cssText="position:fixed;left:0;right:0;bottom:0;max-height:50vh;overflow:auto;margin:0;padding:1em;background:#5c0b0b;color:#fff;font-size:14px;white-space:pre-wrap;z-index:2147483647";
document.body.appendChild(o)}o.textContent=d.error}})();</script>
"""
KEEP_ALIVE = 15.0  # seconds between comments on an idle event stream, to notice closed tabs
# The main thread wakes this often: a signal the system delivered to another thread (a build's, say)
# has its handler run in the main thread only when it runs Python code.
WAKE = 0.1
ENDING = 1.0  # seconds a build under way is given to end when the preview stops (a rebuild takes well under one)


class Preview:
    """What the open pages are told: the number of the last build and its error, if it failed."""

    def __init__(self) -> None:
        self.generation = 0
        self.error: str | None = None
        self.closed = False
        self.changed = threading.Condition()

    def publish(self, error: str | None) -> None:
        with self.changed:
            self.generation += 1
            self.error = error
            self.changed.notify_all()

    def close(self) -> None:
        with self.changed:
            self.closed = True
            self.changed.notify_all()

    def next_state(self, seen: int, timeout: float) -> tuple[int, str | None] | None:
        """The state once it differs from build `seen` (or after timeout); None when closed."""
        with self.changed:
            self.changed.wait_for(lambda: self.closed or self.generation != seen, timeout)
            return None if self.closed else (self.generation, self.error)


def say(note: str) -> None:
    click.echo(note, err=True)


def unexpected(when: str) -> str:
    """Print the exception being handled, whole, and that the preview goes on; return its text."""
    text = traceback.format_exc().rstrip()
    click.echo(f"unexpected error {when} (the preview keeps running; the next save rebuilds):", err=True)
    click.echo(text, err=True)
    return text


def rebuild(options: Options, preview: Preview | None = None, session: Session | None = None) -> None:
    """Build once (with what `session` keeps of the last build), reporting any problem or error
    without stopping the preview."""
    error: str | None = None
    try:
        result = build(options, report=say, session=session or Session())
        click.echo(f"rebuilt: {result.summary.written} written, {result.summary.removed} removed in {result.seconds:.2f} s")
    except (BuildError, click.ClickException) as problem:
        error = problem.format_message()
        click.echo(error, err=True)
    except Exception:  # noqa: BLE001 - whatever goes wrong, the preview goes on
        error = unexpected("while rebuilding")
    if preview is not None:
        preview.publish(error)


def source_paths(options: Options) -> list[Path]:
    """What a build reads: catalogs, content, templates, translations and a snapshot given apart."""
    paths = list(options.sources.values())
    return [*paths, options.prices] if options.prices else paths


def watch(
    options: Options, sources: Sources, stop: threading.Event, preview: Preview | None = None, session: Session | None = None
) -> None:
    """Rebuild whenever a source changes, until stop is set; every error is printed and watching goes on."""
    while not stop.is_set():
        try:
            if not sources.wait(stop):
                return
        except Exception:  # noqa: BLE001 - a file that vanished while being listed, say
            unexpected("while watching the sources")
            stop.wait(POLL)
            continue
        rebuild(options, preview, session)


def inject(page: bytes, generation: int) -> bytes:
    """The page with the reload script before its last </body> (or at its end)."""
    script = (RELOAD_SCRIPT % (generation, EVENTS)).encode()
    at = page.rfind(b"</body>")
    return page + script if at < 0 else page[:at] + script + page[at:]


class FolderHandler(http.server.SimpleHTTPRequestHandler):
    """Serves a folder; a path with a null byte (/en/%00), which no file has, is a bad request."""

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        if "\x00" in urllib.parse.unquote(urllib.parse.urlsplit(self.path).path):
            self.send_error(http.HTTPStatus.BAD_REQUEST, "A null byte in the path")
            return False
        return True


class QuietHandler(FolderHandler):
    """Serves files without logging every request."""

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass


class PreviewHandler(FolderHandler):
    """Serves the preview folder, its pages with the reload script, and the event stream."""

    def __init__(self, *args: object, preview: Preview, **kwargs: object) -> None:
        self.preview = preview
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def do_GET(self) -> None:  # noqa: N802 - the base class's name
        if urllib.parse.urlsplit(self.path).path == EVENTS:
            self.stream_events()
            return
        page = self.page_file()
        if page is None:
            super().do_GET()
            return
        body = inject(page.read_bytes(), self.preview.generation)
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def page_file(self) -> Path | None:
        """The HTML file a request names (a folder: its index.html), if there is one."""
        target = Path(self.translate_path(self.path))
        if urllib.parse.urlsplit(self.path).path.endswith("/"):
            target = target / "index.html"
        return target if target.suffix == ".html" and target.is_file() else None

    def stream_events(self) -> None:
        """Server-sent events: the state now, then each change, until the tab or the preview closes."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        seen = -1
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            while (state := self.preview.next_state(seen, KEEP_ALIVE)) is not None:
                if state[0] == seen:
                    self.wfile.write(b": idle\n\n")
                else:
                    seen = state[0]
                    self.wfile.write(f"data: {json.dumps({'generation': state[0], 'error': state[1]})}\n\n".encode())
                self.wfile.flush()


def http_server(folder: Path, port: int = 0, preview: Preview | None = None) -> http.server.ThreadingHTTPServer:
    """An HTTP server for a folder on 127.0.0.1 (port 0: any free port); quiet unless it is the preview.
    A port that cannot be listened on (taken, say) is a BuildError."""
    handler: Callable[..., http.server.SimpleHTTPRequestHandler]
    if preview is None:
        handler = functools.partial(QuietHandler, directory=str(folder))
    else:
        handler = functools.partial(PreviewHandler, directory=str(folder), preview=preview)
    try:
        return http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    except OSError as error:
        raise BuildError([f"127.0.0.1:{port}: cannot serve the preview here: {error.strerror}"]) from None


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


def build_and_watch(options: Options, sources: Sources, stop: threading.Event, preview: Preview, session: Session) -> None:
    """The preview's first build, then a rebuild at each change until stop is set."""
    rebuild(options, preview, session)
    watch(options, sources, stop, preview, session)


def serve(options: Options, port: int) -> None:
    """Listen on the port (or stop at once), then build into a temporary folder and serve it until
    interrupted, then remove it.

    Builds run in a thread of their own and requests in others, so the preview answers while a build
    runs or fails, and the main thread only waits for Ctrl+C or SIGTERM. options.out is not used: the
    preview has its own folder, so `gpumem build` can run meanwhile.
    """
    scratch = Path(tempfile.mkdtemp(prefix="gpumem-preview-"))
    preview_folder = scratch / "site"
    preview_folder.mkdir()
    options = dataclasses.replace(options, out=preview_folder)
    preview, stop, session = Preview(), threading.Event(), Session()
    try:
        server = http_server(preview_folder, port, preview)
    except BuildError:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sources = Sources(source_paths(options))  # watching from before the first build: no save is missed
    builder = threading.Thread(target=build_and_watch, args=(options, sources, stop, preview, session), daemon=True)
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        click.echo(f"serving {preview_folder} on http://127.0.0.1:{server.server_address[1]}/ (Ctrl+C to stop)")
        click.echo(f"watching the sources ({sources.kind}); open pages reload after each build")
        builder.start()
        while not stop.wait(WAKE):  # until Ctrl+C or SIGTERM raises KeyboardInterrupt here
            pass
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        preview.close()
        server.shutdown()
        server.server_close()
        if builder.ident is not None:  # a signal can come before the builder has started
            builder.join(timeout=ENDING)  # a rebuild under way may end before its folder goes, if it ends soon
        sources.close()
        shutil.rmtree(scratch, ignore_errors=True)
        signal.signal(signal.SIGTERM, previous)
