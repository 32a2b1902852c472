"""Locale formatting through Babel and gettext catalogs with no empty string."""

from __future__ import annotations

from datetime import UTC, datetime

import jinja2
import pytest
from babel.messages.pofile import read_po
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from gpumem.cli.main import main
from gpumem.pages.formats import Formats, gettext_functions, load_translations

from .conftest import edit, line_of
from .project import REPO, copy_project

MOMENT = datetime(2026, 10, 31, 16, 52, tzinfo=UTC)


@pytest.mark.parametrize(
    ("lang", "gb", "money", "date", "either"),
    [
        ("es", "1.120\xa0GB", "0,19\xa0US$", "31 oct 2026", "L40S, RTX 6000 Ada o RTX A6000"),
        ("en", "1,120\xa0GB", "$0.19", "Oct 31, 2026", "L40S, RTX 6000 Ada, or RTX A6000"),
    ],
)
def test_formats_per_locale(lang, gb, money, date, either):
    f = Formats(lang, "USD")
    assert f.gb(1120) == gb
    assert f.money(0.19) == money
    assert f.date(MOMENT) == date
    assert f.time(MOMENT) == "16:52"
    assert f.either(["L40S", "RTX 6000 Ada", "RTX A6000"]) == either


def test_gigabytes_keep_one_decimal_at_most():
    f = Formats("es", "USD")
    assert [f.gb(v) for v in (42.94967296, 168.0, 45.5, 0.04)] == ["42,9\xa0GB", "168\xa0GB", "45,5\xa0GB", "0\xa0GB"]


@pytest.mark.parametrize("lang", ["es", "en", "pt", "fr", "de"])
def test_every_message_is_translated_in_every_plural_form(lang):
    with (REPO / "translations" / lang / "LC_MESSAGES" / "messages.po").open("rb") as handle:
        catalog = read_po(handle, locale=lang)
    empty = [
        m.id for m in catalog if m.id and (not m.string or any(not s for s in (m.string if isinstance(m.string, tuple) else [m.string])))
    ]
    assert empty == []
    assert len(catalog) >= 20


def test_catalogs_hold_every_message_of_the_template():
    with (REPO / "translations" / "messages.pot").open("rb") as handle:
        template = {m.id if isinstance(m.id, str) else m.id[0] for m in read_po(handle) if m.id}
    for lang in ("es", "en", "pt", "fr", "de"):
        with (REPO / "translations" / lang / "LC_MESSAGES" / "messages.po").open("rb") as handle:
            have = {m.id if isinstance(m.id, str) else m.id[0] for m in read_po(handle) if m.id}
        assert template - have == set()


def test_spanish_plurals_and_placeholders():
    strings = gettext_functions(load_translations(REPO / "translations", "es"))
    assert strings["ngettext"]("%(num)s machine", "%(num)s machines", 1) == "1 máquina"
    assert strings["ngettext"]("%(num)s machine", "%(num)s machines", 188) == "188 máquinas"
    assert strings["_"]("%(count)s × %(names)s", count=2, names="H200 <b>") == "2 × H200 &lt;b&gt;"


def test_message_template_is_up_to_date_with_the_templates():
    """Every _() and ngettext() string of the templates, and of the table rows written in Python
    (pages/rows.py), is in messages.pot (run pybabel extract -F babel.cfg)."""
    from babel.messages.extract import extract_from_dir

    found = {
        message if isinstance(message, str) else message[0]
        for folder, method_map in ((REPO / "templates", [("**.html", "jinja2")]), (REPO / "generator/pages", [("rows.py", "python")]))
        for _, _, message, _, _ in extract_from_dir(folder, method_map=method_map)
    }
    with (REPO / "translations" / "messages.pot").open("rb") as handle:
        template = {m.id if isinstance(m.id, str) else m.id[0] for m in read_po(handle) if m.id}
    assert found == template


@settings(max_examples=300)
@given(
    value=st.one_of(st.floats(0, 1e12, allow_nan=False), st.integers(0, 10**12), st.sampled_from([0.05, 0.25, 1.05, 2.5, 42.95, 1120.45])),
    digits=st.integers(0, 3),
    lang=st.sampled_from(["es", "en", "pt", "fr", "de"]),
)
def test_fast_number_formatting_matches_babel(value, digits, lang):
    from babel.numbers import format_decimal

    pattern = "#,##0" + ("." + "#" * digits if digits else "")
    assert Formats(lang, "USD").number(value, digits) == format_decimal(value, format=pattern, locale=lang)


@settings(max_examples=400)
@given(
    value=st.one_of(
        st.floats(0, 1e12, allow_nan=False), st.integers(0, 10**12), st.sampled_from([0.0, -0.0, -3.5, 0.005, 0.015, 2.675, 1120.445])
    ),
    digits=st.one_of(st.none(), st.integers(0, 4)),
    currency=st.sampled_from(["USD", "EUR", "JPY", "BHD"]),
    lang=st.sampled_from(["es", "en", "pt-BR", "fr", "de"]),
)
def test_fast_money_formatting_matches_babel(value, digits, currency, lang):
    import copy

    from babel import Locale
    from babel.numbers import format_currency

    locale = lang.replace("-", "_")
    if digits is None:
        expected = format_currency(value, currency, locale=locale)
    else:
        pattern = copy.copy(Locale.parse(locale).currency_formats["standard"])  # Babel's own is shared
        pattern.frac_prec = (digits, digits)
        expected = pattern.apply(value, Locale.parse(locale), currency=currency, currency_digits=False)
    assert Formats(lang, "USD").money(value, digits, currency) == expected


def test_money_goes_to_babel_where_its_pattern_is_not_the_probes():
    """Hindi groups lakhs and crores (12,34,567.25): the probe does not find the number as _money writes it."""
    formats = Formats("hi", "INR")
    assert formats.money(1234567.25) == "₹12,34,567.25"
    assert formats._shapes == {("INR", None): None}


def test_french_writes_go_and_a_narrow_space_before_colons():
    """French typography: «Go» for GB, and U+202F (not a normal or a wide no-break space) before : ; ! ?"""
    import re

    from .project import REPO

    strings = gettext_functions(load_translations(REPO / "translations", "fr"))
    assert str(strings["_"]("%(value)s GB")) == "%(value)s Go"
    texts = [p.read_text() for p in (REPO / "content/fr").glob("*.md")]
    with (REPO / "translations/fr/LC_MESSAGES/messages.po").open("rb") as handle:
        texts += [m.string if isinstance(m.string, str) else " ".join(m.string) for m in read_po(handle) if m.id]
    wrong = [match.group(0) for text in texts for match in re.finditer(r"\S[ \u00a0][:;!?](?=\s|$)", text)]
    assert wrong == []


def test_compiled_templates_are_kept_between_builds_and_used_only_for_the_same_bytes(tmp_path, monkeypatch):
    """The second build of the same project compiles nothing: layouts and content come from the cache."""
    from gpumem.commands.build import build
    from gpumem.options import template_cache

    from .project import fixture_options

    monkeypatch.setenv("GPUMEM_CACHE", str(tmp_path / "cache"))
    options = fixture_options(out=tmp_path / "first", force=True)
    cache = template_cache(options.project)
    assert cache is not None and cache.parent == tmp_path / "cache" and cache.stat().st_mode & 0o777 == 0o700
    build(options)
    kept = sorted(p.name for p in cache.iterdir())
    compiled: list[str] = []
    real = jinja2.Environment.compile

    def counting(self, source, name=None, filename=None, raw=False, defer_init=False):  # noqa: ANN001, ANN202
        compiled.append(name)
        return real(self, source, name, filename, raw, defer_init)

    monkeypatch.setattr(jinja2.Environment, "compile", counting)
    build(fixture_options(out=tmp_path / "second", force=True))
    assert compiled == []
    assert sorted(p.name for p in cache.iterdir()) == kept
    first = {p.relative_to(tmp_path / "first"): p.read_bytes() for p in (tmp_path / "first").rglob("*") if p.is_file()}
    second = {p.relative_to(tmp_path / "second"): p.read_bytes() for p in (tmp_path / "second").rglob("*") if p.is_file()}
    assert first == second


def test_a_cache_folder_others_can_write_is_not_used(tmp_path, monkeypatch):
    from gpumem.options import template_cache

    monkeypatch.setenv("GPUMEM_CACHE", str(tmp_path / "cache"))
    folder = template_cache(REPO)
    assert folder is not None
    folder.chmod(0o777)
    assert template_cache(REPO) is None
    monkeypatch.setenv("GPUMEM_CACHE", "/dev/null/cache")
    assert template_cache(REPO) is None


def test_html_blocks_a_placeholder_writes_are_kept_as_written_around_the_markdown(tmp_path):
    """Renderer._hold: a macro's table goes into the page as it was written (its cells are not read
    as Markdown, even in the middle of a paragraph), the Markdown around it is converted, and a
    stand-in typed into the content itself is left alone."""
    from markupsafe import Markup

    from gpumem.catalog.load import Problems, read_content
    from gpumem.pages.render import Renderer

    source = tmp_path / "x.md"
    source.write_text(
        '---\ntitle: T\ndescription: D\nfaq:\n  - q: Q\n    a: "A\\n\\n{{ guide.table }}"\n---\n'
        "Some *text*.\n\n{{ guide.table }}\n{{ guide.table }}<p>x</p>\n\n"
        'After <div data-gpumem-held="9"></div> it {{ guide.table }}.\n'
    )
    page = read_content(source, "content/en/x.md", Problems())
    renderer = Renderer(REPO / "templates", REPO / "translations", ["en"])
    table = Markup("<table><tr><td>*a*</td></tr></table>")
    content = renderer.content(page, {**renderer.language_context("en", "USD"), "guide": {"table": table}})
    assert content.body == (
        "<p>Some <em>text</em>.</p>\n<table><tr><td>*a*</td></tr></table>\n<table><tr><td>*a*</td></tr></table>\n<p>x</p>\n\n"
        '<p>After <div data-gpumem-held="9"></div> it <table><tr><td>*a*</td></tr></table>.</p>'
    )
    assert content.faq == ((Markup("Q"), Markup("<p>A</p>\n<table><tr><td>*a*</td></tr></table>")),)


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A whole project folder, as the working folder, to break its layouts."""
    copy_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("args", [["check"], ["build", "--jobs", "1"], ["build", "--jobs", "2"]])
def test_a_layout_that_does_not_parse_is_one_message_at_its_line(project, args):
    edit(project / "templates/base.html", "{% block title %}", "{% if %}{% block title %}")
    line = line_of(project / "templates/base.html", "{% if %}")
    done = CliRunner().invoke(main, ["--project", str(project), *args])
    assert (done.exit_code, done.stdout) == (1, "")
    assert (
        done.stderr
        == f"templates/base.html:{line}: template: Expected an expression, got 'end of statement block'\n1 problem found; nothing was written.\n"
    )


@pytest.mark.parametrize("args", [["check"], ["build", "--jobs", "2"]])
def test_a_layout_that_is_a_folder_is_named(project, args):
    (project / "templates/_stamp.html").unlink()
    (project / "templates/_stamp.html").mkdir()
    done = CliRunner().invoke(main, ["--project", str(project), *args])
    assert (done.exit_code, done.stdout, done.stderr) == (
        1,
        "",
        "templates/_stamp.html: a folder, not a template\n1 problem found; nothing was written.\n",
    )
