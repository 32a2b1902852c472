"""Cache-safe assets (issue 14, part 5): minified, named by their bytes, cached by `_headers`."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from gpumem import assets as assets_module
from gpumem.assets import Assets, headers, minify_css, minify_js, minify_script, publish, published_name
from gpumem.build import build, project_options
from gpumem.errors import BuildError

from .conftest import NOW, edit
from .project import REPO, published


def test_javascript_loses_comments_indentation_blank_lines_and_spaces_but_not_its_line_breaks():
    source = (
        "// a file comment\n"
        "(function () {\n"
        '  "use strict";\n'
        "\n"
        "  var a = 1;  // why one\n"
        "  var b = a / 2 // half\n"
        "    + 3;\n"
        '  var url = "https://example.org/x"; // the slashes of a string stay\n'
        "  var re = /[\"']/g; // a quote in a pattern: the line is kept whole\n"
        "  var t = `first\n"
        "\n"
        "    // in the literal\n"
        "  last`;  // after it\n"
        '  var s = "one \\\n'
        '    two";\n'
        '  f(a, "x = y", c);  // spaces around punctuation go, a string keeps its own\n'
        "  if (a && b) { return x - -y; }  // the space between two signs stays: the line is kept\n"
        "})();\n"
    )
    assert minify_js(source) == (
        "(function(){\n"
        '"use strict";\n'
        "var a=1;\n"
        "var b = a / 2\n"
        "+3;\n"
        'var url="https://example.org/x";\n'
        "var re = /[\"']/g; // a quote in a pattern: the line is kept whole\n"
        "var t = `first\n"
        "\n"
        "    // in the literal\n"
        "  last`;  // after it\n"
        'var s = "one \\\n'
        '    two";\n'
        'f(a,"x = y",c);\n'
        "if (a && b) { return x - -y; }\n"
        "})();\n"
    )


def test_css_loses_comments_and_the_spaces_that_separate_nothing():
    source = '/* head */\n:root { --a : 1px ; }\na :hover , b > c {\n  width: calc(1px + 2px);  /* why */\n  content: "a  ;  b";\n}\n'
    assert minify_css(source) == ':root{--a : 1px}a :hover,b > c{width: calc(1px + 2px);content: "a  ;  b"}'


def test_a_published_name_carries_the_digest_of_the_bytes():
    assert published_name("assets/style.css", b"p{}") == "assets/style.806db22126.css"
    assert published_name("assets/style.css", b"p{ }") == "assets/style.2b6917cfbc.css"
    assert published_name("assets/LICENSE", b"p{}") == "assets/LICENSE.806db22126"


def test_the_published_files_are_the_minified_ones_under_their_digests(tmp_path: Path):
    (tmp_path / "app.js").write_text("  // note\n  go();\n")
    (tmp_path / "app.css").write_text("p { margin: 0 ; }\n")
    (tmp_path / "icon.svg").write_bytes(b"<svg/>\n")
    (tmp_path / "folder").mkdir()
    assets = publish(tmp_path)
    assert assets.names == {
        "assets/app.css": published_name("assets/app.css", b"p{margin: 0}"),
        "assets/app.js": published_name("assets/app.js", b"go();\n"),
        "assets/icon.svg": published_name("assets/icon.svg", b"<svg/>\n"),
    }
    assert assets.files == {
        assets.names["assets/app.css"]: b"p{margin: 0}",
        assets.names["assets/app.js"]: b"go();\n",
        assets.names["assets/icon.svg"]: b"<svg/>\n",
    }


def test_minified_files_are_kept_in_the_cache_folder_until_their_source_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    static, cache = tmp_path / "static", tmp_path / "cache"
    static.mkdir()
    cache.mkdir()
    (static / "app.js").write_text("  // note\n  go();\n")
    (static / "app.css").write_text("p { margin: 0 ; }\n")
    (static / "icon.svg").write_bytes(b"<svg/>\n")
    first = publish(static, cache)
    kept = sorted((cache / "assets").iterdir())
    assert sorted(path.read_bytes() for path in kept) == [b"go();\n", b"p{margin: 0}"]  # not the SVG: nothing to minify
    # The next build (a new process: nothing remembered in memory) reads them instead of minifying.
    assets_module._minified.cache_clear()
    monkeypatch.setitem(assets_module.MINIFIERS, ".js", lambda text: pytest.fail("minified again"))
    assert publish(static, cache) == first
    # An edited file is minified anew, and what its earlier version left is removed.
    monkeypatch.setitem(assets_module.MINIFIERS, ".js", minify_script)
    (static / "app.js").write_text("stop();\n")
    assert publish(static, cache).files[published_name("assets/app.js", b"stop();\n")] == b"stop();\n"
    assert sorted(path.read_bytes() for path in (cache / "assets").iterdir()) == [b"p{margin: 0}", b"stop();\n"]


def test_a_cache_folder_that_cannot_be_written_only_costs_the_minifying(tmp_path: Path):
    (tmp_path / "static").mkdir()
    (tmp_path / "static/app.css").write_text("p { margin: 0 ; }\n")
    (tmp_path / "cache").write_text("a file where the cache folder would be")
    assets = publish(tmp_path / "static", tmp_path / "cache")
    assert assets.files == {published_name("assets/app.css", b"p{margin: 0}"): b"p{margin: 0}"}


def test_a_link_to_an_asset_takes_its_published_name_and_a_missing_one_is_an_error():
    assets = Assets({"assets/a.css": "assets/a.0123456789.css"}, {})
    assert assets.url("assets/a.css") == "assets/a.0123456789.css"
    assert assets.url("es/") == "es/"
    with pytest.raises(ValueError, match=r"^assets/b\.css: no such file in templates/static$"):
        assets.url("assets/b.css")


def test_a_template_linking_to_a_missing_asset_fails_the_build(inputs: Path):
    for name in ("templates", "translations"):
        shutil.copytree(REPO / name, inputs / name)
    edit(inputs / "templates/base.html", "url('assets/style.css')", "url('assets/styles.css')")
    with pytest.raises(BuildError) as caught:
        build(project_options(inputs, catalogs=inputs / "catalogs"), now=NOW)
    assert caught.value.lines[0] == "templates/home.html: es/index.html: ValueError: assets/styles.css: no such file in templates/static"
    assert len(caught.value.lines) == 330 and all(
        line.endswith(": assets/styles.css: no such file in templates/static") for line in caught.value.lines
    )


def test_headers_give_assets_a_year_and_everything_else_no_cache():
    files = {"index.html": b"", "404.html": b"", "es/index.html": b"", "es/x/index.html": b"", "assets/a.1.css": b"", "robots.txt": b""}
    assert headers(files, "/guides/").decode() == (
        "/guides/assets/*\n"
        "  Cache-Control: public, max-age=31536000, immutable\n"
        "/guides/es/*\n"
        "  Cache-Control: public, max-age=0, must-revalidate\n"
        "/guides/\n"
        "  Cache-Control: public, max-age=0, must-revalidate\n"
        "/guides/404.html\n"
        "  Cache-Control: public, max-age=0, must-revalidate\n"
        "/guides/index.html\n"
        "  Cache-Control: public, max-age=0, must-revalidate\n"
        "/guides/robots.txt\n"
        "  Cache-Control: public, max-age=0, must-revalidate\n"
    )


def test_the_built_site_has_its_headers_and_links_only_published_assets(built_site: Path):
    short = "  Cache-Control: public, max-age=0, must-revalidate\n"
    assert (built_site / "_headers").read_text() == (
        "/assets/*\n  Cache-Control: public, max-age=31536000, immutable\n"
        + "".join(f"/{lang}/*\n{short}" for lang in ("de", "en", "es", "fr", "pt"))
        + "".join(f"{path}\n{short}" for path in ("/", "/404.html", "/index.html", "/robots.txt", "/sitemap.xml"))
    )
    sources = sorted(path.name for path in (REPO / "templates/static").iterdir())
    assets = sorted(path.name for path in (built_site / "assets").iterdir())
    assert assets == sorted(published(built_site, name).name for name in sources)
    linked = set()
    for page in built_site.rglob("*.html"):
        linked.update(re.findall(r'(?:href|src)="/(assets/[^"]*)"', page.read_text()))
    assert linked == {f"assets/{name}" for name in assets}


def test_the_built_scripts_and_styles_are_the_minified_sources(built_site: Path):
    for name, minify in (
        ("calculator.js", minify_script),
        ("tables.js", minify_script),
        ("style.css", minify_css),
        ("tables.css", minify_css),
    ):
        expected = minify((REPO / "templates/static" / name).read_text()).encode()
        assert published(built_site, name).read_bytes() == expected
        assert published(built_site, name).name == Path(published_name(f"assets/{name}", expected)).name
    script = published(built_site, "calculator.js").read_text()
    assert not re.search(r"^\s|^//|\n\n", script, re.M)
