"""The site's static files as published: JavaScript and CSS minified, every file named by a digest
of the bytes it serves, and the `_headers` file that lets hosts cache those names for a year.

A name that changes whenever the bytes do is what makes a long cache safe: a CDN can never pair a
new page with an old stylesheet, since the new page names a file the old build never had.

JavaScript is minified by tdewolff/minify (the Go minifier Hugo uses; PyPI `tdewolff-minify` ships
it compiled in its wheel, so `pip install` is all a build needs): it parses the whole script, so a
`catch (x)` binds `x` in its block alone, renames local names and drops what no browser reads. It
takes some 4 ms for all the scripts, so nothing is kept between builds. The CSS minifier below is
this module's own: it only removes comments and the spaces that separate nothing, which nothing can
get wrong in these stylesheets, and their published bytes stay as they were.

Files the build makes rather than finds (the calculator's presets) are published as a folder with an
index beside it, both named by one digest of all their bytes: assets/presets.<digest>.json and
assets/presets.<digest>/<file>. A page then needs that one name to reach any of the files, and they
are cached for a year like the rest, since any change renames the whole folder.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Protocol

import minify

from gpumem.errors import BuildError

FOLDER = "assets"
DIGEST_LENGTH = 10  # hex digits of the file name's digest: 40 bits, no two versions of a file will meet
LONG_CACHE = "public, max-age=31536000, immutable"  # a year: the name changes with the bytes
SHORT_CACHE = "public, max-age=0, must-revalidate"  # pages and the other files: asked again each time
STATIC_LABEL = "templates/static"  # the static folder as errors name it
# The newest syntax the scripts are written in (tables.js: arrow functions, const): the minifier then
# writes none newer, such as `catch {}` or `??`; it does turn Math.pow(a, b) into a**b (ES2016) whatever
# the version.
JS_VERSION = 2015
_MINIFY_ERROR = re.compile(r"(?P<message>.*?) on line (?P<line>\d+) and column (?P<column>\d+)")
_CSS_TOKENS = re.compile(r"""/\*.*?\*/|"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|\s+|[{};,]|[^"'/\s{};,]+|/""", re.S)
_CSS_TIGHT = frozenset("{};,")


class Folder(Protocol):
    """Generated files to publish together: an index (JSON) and the files it leads to, by name."""

    @property
    def index(self) -> bytes: ...

    @property
    def files(self) -> Mapping[str, bytes]: ...


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
                raise ValueError(f"{relative}: no such file in {STATIC_LABEL}")
            return self.names[relative]
        return relative


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
    """JavaScript as published, by tdewolff/minify; raises minify.MinifyError where it cannot read it."""
    minify.config({"js-version": JS_VERSION})  # the library's settings are global to the process: set them each time
    return minify.string("application/javascript", text)


def script_problem(name: str, error: Exception) -> str:
    """What the minifier said of a script of the static folder, as the build reports it:
    `templates/static/NAME.js:LINE:COLUMN: JavaScript syntax error: …`, as YAML syntax errors are shown."""
    said = str(error).partition("\n")[0]
    found = _MINIFY_ERROR.fullmatch(said)
    if found is None:
        return f"{STATIC_LABEL}/{name}: JavaScript: {said}"
    return f"{STATIC_LABEL}/{name}:{found['line']}:{found['column']}: JavaScript syntax error: {found['message']}"


def minified(suffix: str, content: bytes) -> bytes:
    """A static file's bytes as published: JavaScript and CSS minified, anything else as it is."""
    if suffix == ".js":
        return minify_script(content.decode()).encode()
    if suffix == ".css":
        return minify_css(content.decode()).encode()
    return content


def published_name(path: str, content: bytes) -> str:
    """A site path with the digest of its bytes before its last suffix: assets/style.<digest>.css."""
    pure = PurePosixPath(path)
    digest = hashlib.sha256(content).hexdigest()[:DIGEST_LENGTH]
    return str(pure.with_name(f"{pure.stem}.{digest}{pure.suffix}" if pure.suffix else f"{pure.name}.{digest}"))


def folder_digest(folder: Folder) -> str:
    """The digest of a generated folder: of its index and of every file's name and bytes."""
    digest = hashlib.sha256(folder.index)
    for name, content in sorted(folder.files.items()):
        digest.update(b"\0%d\0%s\0" % (len(content), name.encode()))
        digest.update(content)
    return digest.hexdigest()[:DIGEST_LENGTH]


def published_folder(name: str, folder: Folder) -> tuple[str, dict[str, bytes]]:
    """A generated folder's published name (assets/NAME.<digest>, which pages link to) and its files:
    the index as that name plus .json, each file inside the folder of that name."""
    base = f"{FOLDER}/{name}.{folder_digest(folder)}"
    return base, {f"{base}.json": folder.index, **{f"{base}/{file}": content for file, content in folder.files.items()}}


def publish(static: Path, generated: Mapping[str, Folder] | None = None) -> Assets:
    """Every file of the static folder (templates/static), minified where it is JavaScript or CSS,
    under its published name, and each generated folder (published_folder), known to pages as
    assets/NAME; a script that cannot be read fails the build, every such one named."""
    names, files, problems = {}, {}, []
    for path in sorted(static.iterdir()):
        if not path.is_file():
            continue
        try:
            content = minified(path.suffix, path.read_bytes())
        except minify.MinifyError as error:
            problems.append(script_problem(path.name, error))
            continue
        source = f"{FOLDER}/{path.name}"
        names[source] = published_name(source, content)
        files[names[source]] = content
    if problems:
        raise BuildError(problems)
    for name, folder in (generated or {}).items():
        names[f"{FOLDER}/{name}"], published = published_folder(name, folder)
        files.update(published)
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
