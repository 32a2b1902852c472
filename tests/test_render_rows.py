"""Table rows written in Python (pages/rows.py): catalog strings escaped, the macros' bytes kept."""

from __future__ import annotations

import gettext
import os
from pathlib import Path
from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st
from markupsafe import Markup

from gpumem.engines.sizing import Choice, Configuration
from gpumem.figures.subjects import GpuFit, GpuModelRow, GpuPage
from gpumem.pages.compile_ahead import CompilingAhead
from gpumem.pages.formats import Formats, gettext_functions
from gpumem.pages.rows import Rows
from gpumem.records.catalog import Architecture, FormFactor, Gpu, Link, Marketplace, Model

HOSTILE = "<b>\"&'</b>"


def rows(marketplace: str = "Arrakis", rent: str = "https://x.example/rent?gpu={gpu}&count={count}") -> Rows:
    """Rows in English with no translations, linking every model page under /en/models/."""
    strings = gettext_functions(gettext.NullTranslations())
    names = {
        "f": Formats("en", "USD"),
        **strings,
        "link": lambda key, lang, subject="": f"/{lang}/models/{subject}/",
        "rent": Marketplace(marketplace, "https://x.example/", rent).rent,
        "marketplace": Marketplace(marketplace, "https://x.example/", rent),
        "page": SimpleNamespace(lang="en"),
        "catalog": SimpleNamespace(rules=SimpleNamespace(comfortable_requests=3)),
    }
    return Rows(names)


def a_model(name: str) -> Model:
    return Model("m-1", name, "fam", "8B", 8.0, None, 8192, Architecture(32, 32, 8, 128), None, "https://x.example/")


def a_gpu(name: str) -> Gpu:
    link = Link("pcie", "4", 64.0)
    return Gpu("g-1", name, name, "NVIDIA", "datacenter", 24.0, "GDDR6", 1.0, FormFactor("pcie", 4, 2), link, False, 2023, (), "")


def test_a_gpu_page_row_escapes_the_model_name_and_writes_each_fit():
    fit = GpuFit("bf16", 18.25, 0.8, True, 32768, 5, 8192)
    page = GpuPage(a_gpu("L4"), None, (GpuModelRow(a_model(HOSTILE), (fit, None)),))
    assert rows().gpu_fit_rows(page) == (
        '<tr><th scope="row"><a href="/en/models/m-1/">&lt;b&gt;&#34;&amp;&#39;&lt;/b&gt;</a></th>\n'
        '<td><span class="need">18.2\xa0GB</span>\n<span>up to 32,768 tokens</span>\n'
        '<span>5 requests of 8,192 tokens at once</span>\n<span class="comfortable">comfortable</span></td>\n'
        "<td>does not fit</td>\n</tr>"
    )


def test_an_offer_escapes_the_gpu_name_the_marketplace_and_the_rent_address():
    choice = Choice(30.0, (Configuration(a_gpu(HOSTILE), 2, 1.5),), tight=True)
    offer = rows(marketplace='M&"', rent='https://x.example/?g={gpu}&c={count}&"').offer(choice)
    assert offer == (
        '<span class="config">2 × &lt;b&gt;&#34;&amp;&#39;&lt;/b&gt;</span>\n'
        '<span class="price">from $1.50 per hour for the set ($0.75 per GPU-hour)</span>\n'
        '<span class="tight">tight</span><a class="rent" href="https://x.example/?g=g-1&amp;c=2&amp;&#34;">Rent on M&amp;&#34;</a>\n'
    )


def test_the_layouts_are_compiled_ahead_into_the_cache(tmp_path: Path):
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "a.html").write_text("{{ 1 + 1 }}")
    (templates / "b.html").write_text("{% for x in [1, 2] %}{{ x }}{% endfor %}")
    cache = tmp_path / "cache"
    cache.mkdir()
    ahead = CompilingAhead(templates, tmp_path / "translations", cache, jobs=2)
    assert ahead.pid > 0
    ahead.wait()
    assert (ahead.pid, sum(name.endswith(".sealed") for name in os.listdir(cache))) == (0, 2)  # and the cache's key


def test_one_rendering_process_compiles_nothing_ahead(tmp_path: Path):
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "a.html").write_text("a")
    ahead = CompilingAhead(tmp_path / "templates", tmp_path, tmp_path, jobs=1)
    ahead.wait()
    assert (ahead.pid, sorted(os.listdir(tmp_path))) == (0, ["templates"])


@given(value=st.one_of(st.text(), st.integers(), st.floats(allow_nan=False), st.booleans(), st.none(), st.text().map(Markup)))
def test_the_rows_escape_gives_markupsafe_s_text(value):
    from markupsafe import escape as markup_escape

    from gpumem.pages.rows import escape

    assert str(escape(value)) == str(markup_escape(value))
