"""The site's static files as published: JavaScript and CSS minified, every file named by a digest
of the bytes it serves, and the `_headers` file that lets hosts cache those names for a year.

A name that changes whenever the bytes do is what makes a long cache safe: a CDN can never pair a
new page with an old stylesheet, since the new page names a file the old build never had. The
minifying is deterministic and conservative (line by line for JavaScript, so automatic semicolon
insertion sees the same line breaks); it only removes what no browser reads, and gives JavaScript's
local names the shortest free ones (js_shorten.py).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from . import js_shorten
from .js_shorten import shorten
from .options import keep

FOLDER = "assets"
DIGEST_LENGTH = 10  # hex digits of the file name's digest: 40 bits, no two versions of a file will meet
LONG_CACHE = "public, max-age=31536000, immutable"  # a year: the name changes with the bytes
SHORT_CACHE = "public, max-age=0, must-revalidate"  # pages and the other files: asked again each time
_CSS_TOKENS = re.compile(r"""/\*.*?\*/|"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|\s+|[{};,]|[^"'/\s{};,]+|/""", re.S)
_CSS_TIGHT = frozenset("{};,")
_JS_MARKS = re.compile(r"\\.?|['\"`]|//")  # what can open or close a string or a comment
_JS_STRINGS = re.compile(r"""("(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`(?:\\.|[^`\\])*`)""")  # a string on one line
_JS_SIGNS = re.compile(r"[+-] +[+-]")  # `a - -b`, `a + ++b`: the space is what keeps them two operators
_JS_SPACED = re.compile(r" *([{}()\[\];,:=<>!?&|*%+-]) *")  # punctuation and the spaces around it


@dataclass(frozen=True)
class Assets:
    """The published static files: `names` maps each source file's site path (assets/style.css) to
    the one pages link to (assets/style.0123456789.css); `files` holds those, with their bytes."""

    names: dict[str, str]
    files: dict[str, bytes]

    def url(self, relative: str) -> str:
        """A site path with a static file's published name; other paths as they are. A path in the
        assets folder that names no file there is an error, not a link to nothing."""
        if relative.startswith(f"{FOLDER}/"):
            if relative not in self.names:
                raise ValueError(f"{relative}: no such file in templates/static")
            return self.names[relative]
        return relative


def minify_js(text: str) -> str:
    """JavaScript without its comment lines, trailing comments, indentation and blank lines.

    Lines keep their breaks (automatic semicolon insertion sees the same code). A line is only cut
    where a `//` stands outside any quoted string, after a space or at its start; a line that ends
    inside a quote (a regular expression holding one, say) is kept whole, and the lines a string
    spans (a template literal, a line continued by a backslash) are kept byte for byte.
    """
    kept: list[str] = []
    spanning: str | None = None  # the quote of a string that goes on past the line before
    for line in text.splitlines():
        if spanning:  # inside a string: every character is the string's
            kept.append(line)
            spanning = _open_quote(line, spanning)[1]
            continue
        code, spanning = _open_quote(line.strip(), None)
        if code:
            kept.append(code if spanning else _tighten(code))
    return "\n".join(kept) + "\n" if kept else ""


def _tighten(line: str) -> str:
    """A whole line of code without the spaces around its punctuation (`a = f(b, c);` → `a=f(b,c);`),
    strings untouched. A line whose code holds a `/` (a regular expression, or a division) or two signs
    a space keeps apart (`a - -b`) is returned as it is, as is a line whose strings cannot be told."""
    parts = _JS_STRINGS.split(line)  # code, string, code, string, ..., code
    if len(parts) % 2 == 0 or any("/" in code or _JS_SIGNS.search(code) for code in parts[::2]):
        return line
    parts[::2] = [_JS_SPACED.sub(r"\1", code) for code in parts[::2]]
    return "".join(parts)


def _open_quote(line: str, quote: str | None) -> tuple[str, str | None]:
    """A line (begun inside `quote`, or in code) without a trailing `//` comment, and the quote of
    a string that goes on to the next line: a template literal, or a string whose line ends in a
    backslash. A line that ends inside a quote is returned whole: without knowing where its strings
    end, nothing is cut."""
    for match in _JS_MARKS.finditer(line):
        mark, at = match.group(0), match.start()
        if mark[0] == "\\":
            if match.end() > len(line) - 1 and len(mark) == 1:  # a final backslash: the string goes on
                return line, quote
            continue
        if quote is not None:
            quote = None if mark == quote else quote
        elif mark in "'\"`":
            quote = mark
        elif mark == "//" and (at == 0 or line[at - 1] in " \t"):
            return line[:at].rstrip(), None
    return line, quote if quote == "`" else None


def minify_css(text: str) -> str:
    """CSS without comments and without the spaces that separate nothing: runs of white space become
    one space, none around braces, semicolons and commas, no semicolon before a closing brace.
    Strings are kept as written; spaces around other characters (`a :hover`, `calc(1px + 2px)`)
    are meaningful and kept."""
    out: list[str] = []
    space = False
    for match in _CSS_TOKENS.finditer(text):
        token = match.group(0)
        if token.startswith("/*") or token.isspace():
            space = True
            continue
        if space and out and out[-1] not in _CSS_TIGHT and token not in _CSS_TIGHT:
            out.append(" ")
        space = False
        if token == "}" and out and out[-1] == ";":
            out.pop()
        out.append(token)
    return "".join(out)


def minify_script(text: str) -> str:
    """JavaScript as published: minified line by line, then with its local names shortened and no space a token does not need."""
    return shorten(minify_js(text))


MINIFIERS = {".js": minify_script, ".css": minify_css}


def published_name(path: str, content: bytes) -> str:
    """A site path with the digest of its bytes before its last suffix: assets/style.<digest>.css."""
    pure = PurePosixPath(path)
    digest = hashlib.sha256(content).hexdigest()[:DIGEST_LENGTH]
    return str(pure.with_name(f"{pure.stem}.{digest}{pure.suffix}" if pure.suffix else f"{pure.name}.{digest}"))


# The minifiers' own code: a cached result is theirs only while it is the same.
_MINIFIER_CODE = hashlib.sha256(Path(__file__).read_bytes() + Path(js_shorten.__file__).read_bytes()).hexdigest()
CACHED = "assets"  # the cache folder's subfolder of minified files, each named by the digest of what it came from


def _cached_name(suffix: str, content: bytes) -> str:
    return hashlib.sha256(f"{_MINIFIER_CODE}{suffix}".encode() + content).hexdigest()


@functools.lru_cache(maxsize=64)
def _minified(suffix: str, content: bytes, cache: Path | None) -> bytes:
    """A static file's bytes as published. The same bytes are minified once per process (the preview
    rebuilds often) and, given a cache folder (options.template_cache), once until the file or the
    minifiers change: shortening the calculator's scripts takes some 60 ms a build."""
    minify = MINIFIERS.get(suffix)
    if minify is None:
        return content
    kept = cache / CACHED / _cached_name(suffix, content) if cache else None
    if kept is not None:
        with contextlib.suppress(OSError):
            return kept.read_bytes()
    result = minify(content.decode()).encode()
    if kept is not None:
        keep(kept, result)
    return result


def publish(static: Path, cache: Path | None = None) -> Assets:
    """Every file of the static folder (templates/static), minified where it is JavaScript or CSS,
    under its published name; `cache`: where minified files are kept between builds."""
    names, files, used = {}, {}, set()
    for path in sorted(static.iterdir()):
        if not path.is_file():
            continue
        raw = path.read_bytes()
        content = _minified(path.suffix, raw, cache)
        used.add(_cached_name(path.suffix, raw))
        source = f"{FOLDER}/{path.name}"
        names[source] = published_name(source, content)
        files[names[source]] = content
    if cache is not None:  # what an earlier version of a file left is of no more use
        with contextlib.suppress(OSError):
            for name in os.listdir(cache / CACHED):
                if name not in used:
                    with contextlib.suppress(OSError):
                        os.unlink(cache / CACHED / name)
    return Assets(names, files)


def headers(files: dict[str, bytes], base_path: str) -> bytes:
    """The `_headers` file (Netlify's and Cloudflare Pages's syntax): a year's cache for the assets,
    none for everything else. The rules never overlap (both hosts join the values of every rule a
    path matches): one for the assets' folder, one per other top-level folder, one per file at the
    top (the folder's own address `/` for its index.html)."""
    folders = sorted({name.split("/", 1)[0] for name in files if "/" in name} - {FOLDER})
    tops = sorted(name for name in files if "/" not in name)
    rules = [(f"{base_path}{FOLDER}/*", LONG_CACHE)]
    rules += [(f"{base_path}{folder}/*", SHORT_CACHE) for folder in folders]
    rules += [(base_path, SHORT_CACHE)] if "index.html" in tops else []
    rules += [(f"{base_path}{name}", SHORT_CACHE) for name in tops]
    return "".join(f"{path}\n  Cache-Control: {value}\n" for path, value in rules).encode()
