"""Stage 4: turn pages and their precomputed figures into HTML, per language.

Formats numbers, prices and dates with Babel and translates interface strings
through gettext catalogs; never computes memory.
"""

from __future__ import annotations

import contextlib
import json
import re
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import CodeType
from typing import Any

import jinja2
import jinja2.sandbox
import markdown
from markdown.extensions.toc import TocExtension
from markupsafe import Markup, escape

from gpumem.catalog.inputs import label
from gpumem.catalog.load import ContentPage
from gpumem.errors import BuildError
from gpumem.pages import charts
from gpumem.pages.bytecode import SealedBytecodeCache
from gpumem.pages.formats import FormatError, Formats, gettext_functions, load_translations
from gpumem.pages.rows import table_rows
from gpumem.pages.sandbox import ContentSandbox, RenderTimeout


class FailingUndefined(jinja2.StrictUndefined):
    """A missing name or attribute fails where it is used, even as a function's argument."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._fail_with_undefined_error()


BLANK_LINES = re.compile(r"\n\s*\n")
SEPARATOR = "\x1e"  # ASCII record separator: splits one rendered content template into its pieces
# A placeholder's output that is one or more whole HTML blocks (a table, a chart, a list): it is
# held out of the Markdown conversion (Renderer._hold) and put back in its place afterwards.
BLOCK = re.compile(r"<(?:table|figure|div|ul|ol|dl|section|details|pre|blockquote|h[1-6]|p)[\s>].*>", re.S)
HELD = re.compile(r'<div data-gpumem-held="(\d+)"></div>')


def _unescaped(value: Any) -> Any:
    """Strings as a reader sees them: escaped Markup turned back into text, inside lists and dicts too."""
    if isinstance(value, Markup):
        return value.unescape()
    if isinstance(value, dict):
        return {key: _unescaped(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_unescaped(item) for item in value]
    return value


# Inside <script>, a JSON text must not contain what could end the element or start markup:
# "<", ">" and "&" are written as JSON escapes (only ever inside strings), and so are the two
# line terminators that older JavaScript parsers reject.
_SCRIPT_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def script_json(value: Any, compact: bool = False) -> Markup:
    """JSON safe inside a <script> element, whatever strings the catalogs hold.

    A string is taken as JSON text already serialized; anything else is serialized here (`compact`: with no
    space after "," and ":", as the calculator's messages are, which count towards its page's weight).
    """
    separators = (",", ":") if compact else None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True, separators=separators)
    return Markup(str(text).translate(_SCRIPT_ESCAPES))


def text_json(value: Any, compact: bool = False) -> Markup:
    """JSON for a script element: the text of translated strings, safe inside HTML."""
    return script_json(_unescaped(value), compact)


def faq_json(faq: Iterable[tuple[Markup, Markup]]) -> Markup:
    """JSON-LD FAQPage for a page's questions and answers (answers as plain text)."""
    entities = [
        {
            "@type": "Question",
            "name": Markup(question).striptags(),
            "acceptedAnswer": {"@type": "Answer", "text": Markup(answer).striptags()},
        }
        for question, answer in faq
    ]
    return script_json({"@context": "https://schema.org", "@type": "FAQPage", "mainEntity": entities})


def breadcrumb_json(steps: Iterable[tuple[str, str]]) -> Markup:
    """JSON-LD BreadcrumbList of (name, absolute URL) steps, first to last (names as plain text, their
    spaces kept: French puts a narrow no-break one before '?'; a step without a URL, a section whose
    index page does not exist, has no item)."""
    items = [
        {"@type": "ListItem", "position": position, "name": escape(name).unescape(), **({"item": address} if address else {})}
        for position, (name, address) in enumerate(steps, start=1)
    ]
    return script_json({"@context": "https://schema.org", "@type": "BreadcrumbList", "itemListElement": items})


@dataclass(frozen=True)
class Content:
    """A content page rendered: title, description, body HTML and FAQ items."""

    title: str
    description: str
    body: Markup
    faq: tuple[tuple[Markup, Markup], ...]


class Renderer:
    """One Jinja environment; a page is rendered with its language's formats and strings."""

    def __init__(
        self,
        templates_dir: Path,
        translations_dir: Path,
        languages: Iterable[str],
        cache: Path | None = None,
        messages: dict[str, bytes] | None = None,
        content_seconds: float | None = None,
    ) -> None:
        """`messages`: the languages' .mo bytes when compiled already (compile_translations);
        `content_seconds`: the longest one content file may take to render (sandbox.SECONDS)."""
        # Compiled templates (layouts and content) are kept between builds, keyed on their bytes, sealed.
        self.templates = templates_dir
        self.compiled = SealedBytecodeCache(cache) if cache is not None else None
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(templates_dir),
            bytecode_cache=self.compiled,
            auto_reload=False,  # one build's environment: each template is read once, not checked again at each import
            autoescape=True,
            trim_blocks=True,
            lstrip_blocks=True,
            undefined=FailingUndefined,
            keep_trailing_newline=True,
        )
        self.env.filters["compact"] = lambda html: Markup(BLANK_LINES.sub("\n", str(html)).strip())
        self.env.globals["faq_json"] = faq_json
        self.env.globals["breadcrumb_json"] = breadcrumb_json
        self.env.globals["charts"] = charts
        self.env.globals["table_rows"] = table_rows  # the model and GPU pages' table bodies, written in Python
        self.env.filters["text_json"] = text_json
        self.env.filters["script_json"] = script_json
        self.env.globals["part_width"] = lambda part, total: f"{100 * part / total:.2f}%"
        # Content Markdown is written by people, not programmers: its templates run sandboxed (no
        # attribute starting with "_", no unsafe callable), with no loader (nothing to include),
        # only the names in CONTENT_NAMES, and bounds on what it computes and for how long.
        self.content_env = ContentSandbox(
            seconds=content_seconds,
            loader=jinja2.DictLoader({}),
            autoescape=True,
            trim_blocks=True,
            lstrip_blocks=True,
            undefined=FailingUndefined,
            keep_trailing_newline=True,
            finalize=self._hold,
        )
        self._held: list[str] | None = None  # the blocks held out of the content page being filled
        self.content_env.filters.update(self.env.filters)
        self.content_env.bound_filters()
        messages = messages or {}
        self.strings = {lang: gettext_functions(load_translations(translations_dir, lang, messages.get(lang))) for lang in languages}
        # The extension itself, not its name: a name is looked up among the installed packages'
        # entry points, which costs every build 16 ms.
        self.markdown = markdown.Markdown(extensions=[TocExtension()], output_format="html")
        self._contexts: dict[tuple[str, str], dict[str, Any]] = {}

    def render(self, template: str, context: dict[str, Any]) -> str:
        with self._layout_errors():
            return self.env.get_template(template).render(context)

    @contextlib.contextmanager
    def _layout_errors(self) -> Iterator[None]:
        """A layout that cannot be read or parsed (the one asked for, or one it extends or includes) as a BuildError."""
        try:
            yield
        except jinja2.TemplateSyntaxError as error:
            raise BuildError([f"{label(Path(error.filename or self.templates))}:{error.lineno}: template: {error.message}"]) from None
        except jinja2.TemplateNotFound as error:
            path = self.templates / str(error.name)
            raise BuildError([f"{label(path)}: {'a folder, not a template' if path.is_dir() else 'no such template'}"]) from None
        except OSError as error:
            raise BuildError([f"{label(Path(str(error.filename)))}: cannot read: {error.strerror}"]) from None

    def language_context(self, lang: str, currency: str) -> dict[str, Any]:
        """Formats and strings of one language, made once and shared by its pages."""
        key = (lang, currency)
        if key not in self._contexts:
            strings = self.strings[lang]
            unit = str(strings["_"]("%(value)s GB")).replace("%(value)s", "").strip()  # French writes Go
            self._contexts[key] = {"lang": lang, "f": Formats(lang, currency, unit), "rows_words": {}, **strings}
        return self._contexts[key]

    def prepare(self, currency: str) -> None:
        """Compile every template and load every locale now, before pages are shared among processes."""
        self.compile_all()
        for lang in self.strings:
            self.language_context(lang, currency)

    def compile_all(self) -> None:
        """Every layout compiled (or read from the cache)."""
        with self._layout_errors():
            for name in self.env.list_templates(filter_func=lambda name: not name.startswith("static/")):
                self.env.get_template(name)

    def content(self, page: ContentPage, context: dict[str, Any]) -> Content:
        """Fill a Markdown page's placeholders with the build's figures, then convert it.

        Front matter and body are rendered as one template (compiled once), each piece at
        its own line of the file, so errors name the right line.
        """
        meta = page.meta
        pieces = [(meta.line_of("title"), meta["title"]), (meta.line_of("description"), meta["description"])]
        for item in meta.get("faq", ()):
            pieces += [(item.line_of("q"), item["q"]), (item.line_of("a"), item["a"])]
        pieces.append((page.body_line, page.body))
        names = {name: context[name] for name in CONTENT_NAMES if name in context}
        with self._layout_errors():
            names["m"] = self.env.get_template("_macros.html").make_module(context)
        held: list[str] = []
        filled = [text.strip("\n") for text in self._fill(page, pieces, names, held)]
        title, description, *faq, body = filled
        return Content(
            title=title.strip(),
            description=description.strip(),
            body=self._markdown(body, held),
            faq=tuple((Markup(faq[i].strip()), self._markdown(faq[i + 1], held)) for i in range(0, len(faq), 2)),
        )

    def _hold(self, value: Any) -> Any:
        """A content placeholder's output (the sandbox's finalize): HTML blocks that a macro wrote are
        held out of the Markdown conversion, a one-element stand-in left in their place.

        Python-Markdown keeps a raw HTML block as it is, but parses it tag by tag to find where it
        ends: the tables and charts of the guides were a third of the conversions' time. The stand-in
        is a block of the same kind to it (a <div> at the same place), so the text around it is
        converted as it was around the block.
        """
        if self._held is None or not isinstance(value, Markup) or not BLOCK.fullmatch(value):
            return value
        self._held.append(str(value))
        return Markup(f'<div data-gpumem-held="{len(self._held) - 1}"></div>')

    def _compiled_content(self, source: str, path: str) -> CodeType:
        """A content template compiled in the sandbox, from the cache when these bytes were compiled before."""
        env = self.content_env
        if self.compiled is None:
            return env.compile(source, name=path, filename=path)
        bucket = self.compiled.get_bucket(
            env, f"content:{env.compiled_as}:held:{path}", path, source
        )  # not a layout's name; compiled with _hold
        if bucket.code is None:
            bucket.code = env.compile(source, name=path, filename=path)
            self.compiled.set_bucket(bucket)
        return bucket.code

    def _markdown(self, source: str, held: list[str]) -> Markup:
        """Markdown converted, with the blocks held out of it (_hold) back in their places."""
        self.markdown.reset()
        html = self.markdown.convert(source)
        if not held:
            return Markup(html)
        return Markup(HELD.sub(lambda stand_in: held[int(stand_in[1])] if int(stand_in[1]) < len(held) else stand_in[0], html))

    def _fill(self, page: ContentPage, pieces: list[tuple[int, str]], names: dict[str, Any], held: list[str]) -> list[str]:
        """Render content pieces (line, text) as one sandboxed template; errors name the content file and line."""
        source, line = [], 1
        for start, text in pieces:
            source.append("\n" * max(0, start - line) + text + SEPARATOR)
            line = max(line, start) + text.count("\n")
        env = self.content_env
        try:
            code = self._compiled_content("".join(source), page.path)
            self._held = held
            rendered = env.render_file(code, names, page.path)
        except jinja2.TemplateSyntaxError as error:
            raise BuildError([f"{page.path}:{error.lineno}: template: {error.message}"]) from None
        except Exception as error:  # noqa: BLE001 - whatever a placeholder does wrong is the content's problem
            frames = [f.lineno for f in traceback.extract_tb(error.__traceback__) if f.filename == page.path]
            if isinstance(error, RenderTimeout):
                frames = [error.line] if error.line else []
            where = f"{page.path}:{frames[-1]}" if frames else page.path
            raise BuildError([f"{where}: template: {_explain(error)}"]) from None
        finally:
            self._held = None
        return rendered.split(SEPARATOR)[: len(pieces)]


# What content templates may name: formats, strings, links and the figures computed for them.
CONTENT_NAMES: tuple[str, ...] = (
    "f",
    "_",
    "ngettext",
    "link",
    "page",
    "rules",
    "snapshot",
    "stamp",
    "guide",
    "vram",
    "sizing",
    "calc",
    "method",
    "marketplace",
    "tune",
    "api",
    "infer",
)


def _explain(error: Exception) -> str:
    """An error raised by a placeholder, in words: the message, or the kind of error when it has none."""
    if isinstance(error, jinja2.TemplateNotFound):
        return f"content cannot include or import other templates ({error.name!r})"
    if isinstance(error, FormatError | RenderTimeout):
        return str(error)
    if isinstance(error, jinja2.sandbox.SecurityError):
        return f"not allowed in content: {error}"
    text = str(error).strip()
    kind = type(error).__name__
    return f"{kind}: {text}" if text and not isinstance(error, jinja2.UndefinedError) else text or kind
