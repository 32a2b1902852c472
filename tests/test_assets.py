"""Cache-safe assets (issue 14, part 5): minified (JavaScript by tdewolff/minify, issue 20), named by their bytes, cached by `_headers`."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import quickjs

from gpumem.commands.build import build
from gpumem.errors import BuildError
from gpumem.figures.calculator_data import PresetFiles
from gpumem.options import project_options
from gpumem.pages.assets import Assets, folder_digest, headers, minify_css, minify_script, publish, published_name

from .conftest import NOW, edit, line_of
from .javascript import counting_file, preset_folder
from .project import REPO, copy_project, published


def test_a_script_is_minified_whole_its_locals_renamed_and_no_syntax_newer_than_its_own():
    source = (
        "// a file comment\n"
        "(function () {\n"
        '  "use strict";\n'
        "  var total = 0; // why it starts at zero\n"
        "  function add(value, weight) {\n"
        "    total += value * weight;\n"
        "    return total;\n"
        "  }\n"
        "  try {\n"
        "    JSON.parse(window.saved);\n"
        "  } catch (error) {\n"
        "    total = window.fallback != null ? window.fallback : -1;\n"
        "  }\n"
        "  window.add = add;\n"
        "  window.half = Math.pow(total, 0.5) / 2;\n"
        "})();\n"
    )
    # `catch (t)` keeps its binding (ES2019 may leave it out: JS_VERSION); Math.pow becomes ** whatever the version.
    assert minify_script(source) == (
        '(function(){"use strict";var e=0;function t(t,n){return e+=t*n,e}'
        "try{JSON.parse(window.saved)}catch(t){e=window.fallback!=null?window.fallback:-1}"
        "window.add=t,window.half=e**.5/2})()"
    )


def test_a_catch_parameter_is_bound_in_its_block_alone():
    # Issue 20: the hand-written minifier scoped `x` to the whole of probe, and the minified script returned probe's own text.
    source = (
        "var result = (function () {\n"
        '  "use strict";\n'
        '  var x = "outer";\n'
        "  var own = String(probe);\n"
        "  function probe(text) {\n"
        "    try {\n"
        "      throw text;\n"
        "    } catch (x) {\n"
        "      text = x + text;\n"
        "    }\n"
        "    return x;\n"
        "  }\n"
        "  return String(probe(own + own));\n"
        "})();\n"
    )
    minified = minify_script(source)
    assert minified == (
        'var result=function(){"use strict";var n="outer",e=String(t);function t(e){try{throw e}catch(t){e=t+e}return n}return String(t(e+e))}()'
    )
    for script in (source, minified):
        engine = quickjs.Context()
        engine.eval(script)
        assert engine.eval("result") == "outer"


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
        "assets/app.js": published_name("assets/app.js", b"go()"),
        "assets/icon.svg": published_name("assets/icon.svg", b"<svg/>\n"),
    }
    assert assets.files == {
        assets.names["assets/app.css"]: b"p{margin: 0}",
        assets.names["assets/app.js"]: b"go()",
        assets.names["assets/icon.svg"]: b"<svg/>\n",
    }


def test_a_generated_folder_is_published_with_its_index_under_one_digest(tmp_path: Path):
    (tmp_path / "app.js").write_text("go();\n")
    folder = PresetFiles(b'[["a","A"]]', {"a.json": b'["a",1]', "b.json": b'["b",2]'})
    digest = folder_digest(folder)
    assert digest == hashlib.sha256(b'[["a","A"]]' + b'\x007\x00a.json\x00["a",1]' + b'\x007\x00b.json\x00["b",2]').hexdigest()[:10]
    assets = publish(tmp_path, {"presets": folder})
    assert assets.names == {"assets/app.js": published_name("assets/app.js", b"go()"), "assets/presets": f"assets/presets.{digest}"}
    assert assets.files == {
        assets.names["assets/app.js"]: b"go()",
        f"assets/presets.{digest}.json": b'[["a","A"]]',
        f"assets/presets.{digest}/a.json": b'["a",1]',
        f"assets/presets.{digest}/b.json": b'["b",2]',
    }
    assert assets.url("assets/presets") == f"assets/presets.{digest}"
    moved = PresetFiles(b'[["a","A"]]', {"a.json": b'["a",1]', "c.json": b'["b",2]'})  # the same bytes under another name
    assert folder_digest(moved) != digest


def test_a_script_the_minifier_cannot_read_fails_the_build_with_its_line_and_column(tmp_path: Path):
    (tmp_path / "broken.js").write_text("(function () {\n  var a = ;\n})();\n")
    (tmp_path / "fine.js").write_text("go();\n")
    (tmp_path / "open.js").write_text("var s = `never closed;\n")
    with pytest.raises(BuildError) as caught:
        publish(tmp_path)
    assert caught.value.lines == [
        "templates/static/broken.js:2:11: JavaScript syntax error: unexpected ; in expression",
        "templates/static/open.js:1:9: JavaScript syntax error: unterminated template literal in expression",
    ]


def test_the_build_command_reports_a_broken_script_and_exits_with_1(tmp_path: Path):
    copy_project(tmp_path)
    edit(tmp_path / "templates/static/speed.js", '"use strict";', '"use strict";\n  var broken = ;')
    line = line_of(tmp_path / "templates/static/speed.js", "var broken = ;")
    done = subprocess.run(
        [sys.executable, "-m", "gpumem", "--project", str(tmp_path), "build"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines()[-2:] == [
        f"templates/static/speed.js:{line}:16: JavaScript syntax error: unexpected ; in expression",
        "1 problem found; nothing was written.",
    ]
    assert not (tmp_path / "site").exists()


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
    assert len(caught.value.lines) == 340 and all(
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
        + "".join(f"/{folder}/*\n{short}" for folder in ("de", "en", "es", "fr", "pagefind", "pt"))  # pagefind/: the search index
        + "".join(f"{path}\n{short}" for path in ("/", "/404.html", "/index.html", "/robots.txt", "/sitemap.xml"))
    )
    sources = sorted(path.name for path in (REPO / "templates/static").iterdir())
    assets = sorted(path.name for path in (built_site / "assets").iterdir())
    presets = preset_folder(built_site).name  # the calculator's presets (test_calculator_presets.py): a folder and its list
    counting = counting_file(built_site).stem  # what config.js reads: its data, and a folder of messages per language
    generated = [presets, f"{presets}.json", counting, f"{counting}.json"]
    assert assets == sorted([*(published(built_site, name).name for name in sources), *generated])
    assert sorted(path.name for path in (built_site / "assets" / counting).iterdir()) == [
        "de.json",
        "en.json",
        "es.json",
        "fr.json",
        "pt.json",
    ]
    linked, fetched = set(), set()
    for page in built_site.rglob("*.html"):
        linked.update(re.findall(r'(?:href|src)="/(assets/[^"]*)"', page.read_text()))
        fetched.update(re.findall(r'data-(?:presets|config|config-data|config-words|training)="/(assets/[^"]*)"', page.read_text()))
    config = str(published(built_site, "config.js").relative_to(built_site))  # loaded when a reader pastes a config.json
    training = str(published(built_site, "training.js").relative_to(built_site))  # when a reader picks a fine-tuning mode
    assert linked == {f"assets/{name}" for name in assets if not name.startswith((presets, counting))} - {config, training}
    words = {f"assets/{counting}/{lang}.json" for lang in ("de", "en", "es", "fr", "pt")}
    assert fetched == {f"assets/{presets}", config, f"assets/{counting}", training, *words}


def test_the_built_scripts_and_styles_are_the_minified_sources(built_site: Path):
    for name, minify in (
        ("calculator.js", minify_script),
        ("config.js", minify_script),
        ("tables.js", minify_script),
        ("style.css", minify_css),
        ("tables.css", minify_css),
        ("charts.css", minify_css),
        ("forms.css", minify_css),
        ("search.js", minify_script),
        ("search.css", minify_css),
    ):
        expected = minify((REPO / "templates/static" / name).read_text()).encode()
        assert published(built_site, name).read_bytes() == expected
        assert published(built_site, name).name == Path(published_name(f"assets/{name}", expected)).name
