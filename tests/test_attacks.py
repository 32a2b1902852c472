"""Hostile and careless input: each attack is reported as `path:line: id: field: message`,
with exit code 1, no traceback and nothing written (issue 9's list, one test each)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpumem.commands.build import build, check, gather
from gpumem.errors import BuildError
from gpumem.options import project_options

from .conftest import NOW, SNAPSHOT, edit, line_of, options_for
from .project import CATALOGS, REPO, copy_project

MODELS = Path("catalogs/models.yaml")
GPUS = Path("catalogs/gpus.yaml")
SITE = Path("content/site.yaml")
HOME = Path("content/en/home.md")


@pytest.fixture
def root(inputs: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The copy of the inputs, as the working folder, so errors show short paths."""
    monkeypatch.chdir(inputs)
    return inputs


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A whole project folder (catalogs, content, templates, translations) to break, as the working folder."""
    copy_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def problems(root: Path, **options) -> list[str]:
    with pytest.raises(BuildError) as raised:
        build(options_for(root, **options), now=NOW)
    assert not (root / "site").exists()
    return raised.value.lines


def cli(root: Path, *args: str) -> subprocess.CompletedProcess:
    """`gpumem build` in root; its timeout is far beyond any build, so reaching it means the build hung."""
    command = [sys.executable, "-m", "gpumem", "--project", str(REPO), "build", "--catalogs", "catalogs", "--content", "content"]
    return subprocess.run([*command, "--out", "site", *args], cwd=root, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    "path",
    ["catalogs/models.yaml", "catalogs/gpus.yaml", "catalogs/rules.yaml", f"catalogs/prices/{SNAPSHOT}", "content/site.yaml"],
)
def test_an_empty_yaml_file(root, path):
    (root / path).write_text("")
    assert problems(root) == [f"{path}:1: empty file (expected YAML fields)"]


def test_an_empty_front_matter(root):
    (root / HOME).write_text("---\n---\nSome words.\n")
    assert problems(root) == ["content/en/home.md:2: front matter: empty (expected title and description)"]


def test_a_content_file_with_windows_line_ends_builds(root):
    text = (root / HOME).read_text()
    (root / HOME).write_bytes(text.replace("\n", "\r\n").encode())
    assert build(options_for(root), now=NOW).pages == 347


@pytest.mark.parametrize("path", ["catalogs/models.yaml", "content/en/home.md"])
def test_bytes_that_are_not_utf8(root, path):
    data = (root / path).read_bytes()
    offset = data.index(b"\n", 40) + 3
    (root / path).write_bytes(data[:offset] + b"\xff" + data[offset + 1 :])
    line = data[:offset].count(b"\n") + 1
    assert problems(root) == [f"{path}:{line}: not UTF-8 text (byte 0xff at offset {offset})"]


def test_a_yaml_alias_bomb_is_refused_at_once(root):
    """9 ** 20 values in 21 lines: unfolding them cannot end (9 ** 9 took 42 s and 3 GB), so the command's
    timeout in cli() means it unfolded them, whatever the machine's load."""
    lines = ["v0: &v0 [x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 20):
        lines.append(f"v{level}: &v{level} [{', '.join([f'*v{level - 1}'] * 9)}]")
    (root / MODELS).write_text("\n".join([*lines, "models: [*v19]"]) + "\n")
    done = cli(root)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "catalogs/models.yaml:2: YAML aliases (*name) are not accepted: write each value out\n1 problem found; nothing was written.\n"
    )


@pytest.mark.parametrize(
    "path, old, new, message",
    [
        (MODELS, "params_b: 8.030261248", "params_b: 1.0e+308", "llama-3.1-8b: params_b: expected at most 100,000, got 1e+308"),
        (MODELS, "layers: 32\n", "layers: " + "1" + "0" * 39 + "\n", "llama-3.1-8b: layers: expected at most 1,000, got a 40-digit number"),
        (GPUS, "memory_gb: 24\n", "memory_gb: 1.0e+308\n", "rtx-3090: memory_gb: expected at most 10,000, got 1e+308"),
        (MODELS, "native_context: 131072", "native_context: .inf", "llama-3.1-8b: native_context: expected a positive integer, got inf"),
    ],
)
def test_absurd_magnitudes(root, path, old, new, message):
    edit(root / path, old, new)
    assert problems(root) == [f"{path}:{line_of(root / path, new.strip())}: {message}"]


def test_an_id_with_a_trailing_newline(root):
    edit(root / MODELS, "  - id: llama-2-7b\n", '  - id: "llama-2-7b\\n"\n')
    line = line_of(root / MODELS, 'id: "llama-2-7b')
    assert problems(root) == [
        f"catalogs/models.yaml:{line}: entry 7: id: expected an id of at most 64 lowercase letters, digits, '.', '-' or '_', got 'llama-2-7b\\n'"
    ]


def test_a_five_megabyte_name(root):
    edit(root / MODELS, 'name: "Llama 2 7B"', "name: " + "x" * 5_000_000)
    line = line_of(root / MODELS, "name: xxx")
    assert problems(root) == [f"catalogs/models.yaml:{line}: llama-2-7b: name: expected at most 300 characters, got 5,000,000"]


@pytest.mark.parametrize(
    "placeholder, message",
    [
        ("{{ 1/0 }}", "template: ZeroDivisionError: division by zero"),
        ('{% include "../x" %}', "template: content cannot include or import other templates ('../x')"),
        ('{% import "_macros.html" as x %}', "template: content cannot include or import other templates ('_macros.html')"),
        ('{{ f.gb("abc") }}', "template: expected a number to format, got 'abc'"),
        ('{{ f.money("1e9999") }}', "template: expected a number to format, got '1e9999'"),
        ("{{ nothing_here }}", "template: 'nothing_here' is undefined"),
    ],
)
def test_placeholders_that_fail(root, placeholder, message):
    edit(root / HOME, "right now.\n---\n", f"right now.\n---\n{placeholder}\n")
    assert problems(root) == [f"content/en/home.md:7: {message}"]


def test_content_cannot_reach_python(root, tmp_path):
    marker = tmp_path / "ran"
    edit(root / HOME, "right now.\n---\n", f"right now.\n---\n{{{{ lipsum.__globals__['os'].popen('touch {marker}').read() }}}}\n")
    assert problems(root) == [
        "content/en/home.md:7: template: not allowed in content: access to attribute '__globals__' of 'function' object is unsafe."
    ]
    assert not marker.exists()


def test_content_sees_only_its_names(root):
    edit(root / HOME, "right now.\n---\n", "right now.\n---\n{{ site.base_url }} {{ options }}\n")
    assert problems(root) == ["content/en/home.md:7: template: 'site' is undefined"]


def test_every_template_error_at_once(root):
    edit(root / HOME, "right now.\n---\n", "right now.\n---\n{{ 1/0 }}\n")
    edit(root / "content/es/home.md", "\n---\n", "\n---\n{{ nope }}\n")
    edit(root / "content/de/guide-vram.md", "\n---\n", "\n---\n{% if %}\n")
    assert problems(root) == [
        "content/es/home.md:7: template: 'nope' is undefined",
        "content/en/home.md:7: template: ZeroDivisionError: division by zero",
        f"content/de/guide-vram.md:{line_of(root / 'content/de/guide-vram.md', '{% if %}')}: template: Expected an expression, got 'end of statement block'",
    ]


def test_a_placeholder_typo_in_a_translation(project):
    po = project / "translations/es/LC_MESSAGES/messages.po"
    edit(
        po,
        'msgstr "%(count)s × %(gpu)s, %(price)s/h"',
        'msgstr "%(cuont)s × %(gpu)s, %(price)s/h"',
    )
    line = line_of(po, 'msgid "%(count)s × %(gpu)s, %(price)s per hour"')
    with pytest.raises(BuildError) as raised:
        build(project_options(project, catalogs=CATALOGS), now=NOW)
    assert raised.value.lines == [
        f"translations/es/LC_MESSAGES/messages.po:{line}: msgstr: unknown named placeholder 'cuont' (msgid '%(count)s × %(gpu)s, %(price)s per hour')"
    ]


def test_a_regional_language_code_builds(project):
    """pt-BR, as the validator's own message suggests: Babel's pt_BR formats it, pages say lang="pt-BR"."""
    edit(project / "content/site.yaml", "  - {code: pt, name: Português}\n", "  - {code: pt-BR, name: Português (Brasil)}\n")
    text = (project / "content/site.yaml").read_text().replace(" pt: ", " pt-BR: ").replace("\n    pt: ", "\n    pt-BR: ")
    (project / "content/site.yaml").write_text(text)
    (project / "content/pt").rename(project / "content/pt-BR")
    (project / "translations/pt").rename(project / "translations/pt-BR")
    result = build(project_options(project, catalogs=CATALOGS), now=NOW)
    assert result.pages == 347
    home = (project / "site/pt-BR/index.html").read_text()
    assert '<html lang="pt-BR">' in home
    assert "31 de out. de 2026" in home


def test_two_pages_routed_to_one_path(root):
    edit(root / SITE, "calculator: {es: calculadora, en: calculator,", "calculator: {es: calculadora, en: prices,")
    assert problems(root) == [
        f"content/site.yaml:{line_of(root / SITE, '  prices: {')}: site: routes.prices.en: path 'prices' is also the path of routes.calculator.en"
    ]


def test_a_model_page_that_would_land_on_a_guide(root):
    edit(root / SITE, "model: {es: modelos, en: models,", "model: {es: modelos, en: guides,")
    edit(root / MODELS, "  - id: llama-2-7b\n", "  - id: gpu-memory\n")
    assert problems(root) == [
        f"content/site.yaml:{line_of(root / SITE, '  model: {')}: site: routes.model.en: "
        "model gpu-memory (en) would be written to en/guides/gpu-memory/index.html, as guide-memory (en)"
    ]


def refused_by_check_and_build(root: Path) -> list[str]:
    """The problems `gpumem check` reports, asserted to be those `gpumem build` reports."""
    with pytest.raises(BuildError) as raised:
        check(options_for(root), now=NOW)
    assert problems(root) == raised.value.lines
    return raised.value.lines


def test_a_route_named_like_the_site_s_own_404_page(root):
    edit(root / SITE, "en: guides/gpu-memory,", "en: 404.html,")
    assert refused_by_check_and_build(root) == [
        f"content/site.yaml:{line_of(root / SITE, '  guide-memory: {')}: site: routes.guide-memory.en: guide-memory (en) "
        "would be written to en/404.html/index.html, inside en/404.html, one of the site's own files"
    ]


def test_a_model_id_named_like_the_index_page_of_the_models(root):
    edit(root / MODELS, "  - id: llama-2-7b\n", "  - id: index.html\n")
    folders = {"es": "modelos", "en": "models", "pt": "modelos", "fr": "modeles", "de": "modelle"}
    assert refused_by_check_and_build(root) == [
        f"catalogs/models.yaml: model index.html ({lang}) would be written to {lang}/{folder}/index.html/index.html, "
        f"inside {lang}/{folder}/index.html, the page of models ({lang}); give it another id"
        for lang, folder in folders.items()
    ]


@pytest.mark.parametrize(
    "address, message",
    [
        ("http://gpumem.example.org/", "expected a URL starting with https://, got 'http://gpumem.example.org/'"),
        (
            '"https://gpumem.example.org/\\"a/"',
            "'\"' is not a character a URL holds, in 'https://gpumem.example.org/\"a/'; write it percent-encoded (%22)",
        ),
        (
            "https://gpumem.example.org/<b>/",
            "'<' is not a character a URL holds, in 'https://gpumem.example.org/<b>/'; write it percent-encoded (%3C)",
        ),
        (
            "https://gpumem.example.org/guides/../",
            "the path segment '..' of 'https://gpumem.example.org/guides/../' is no folder: hosts resolve it away, "
            "and the _headers rules would match nothing; write the path it stands for",
        ),
        (
            "https://deploy:hunter2@gpumem.example.org/",
            "holds a user name or password (before '@'), which every page's canonical link would publish; remove it",
        ),
        (
            "https://gpumem.example.org/?lang=en",
            "expected no query (?) or fragment (#) in the site's address, got 'https://gpumem.example.org/?lang=en'",
        ),
    ],
)
def test_a_base_url_that_no_link_should_carry(root, address, message):
    edit(root / SITE, "base_url: https://gpumem.example.org/", f"base_url: {address}")
    assert problems(root) == [f"content/site.yaml:{line_of(root / SITE, 'base_url:')}: site: base_url: {message}"]


@pytest.mark.parametrize("inside", ["templates/static/out", "content/site", "host/public", "catalogs"])
def test_an_output_inside_a_folder_the_build_reads_is_refused_and_named(project, inside):
    """templates/static/out published the lock file as an asset, and no build ever found nothing changed."""
    out = project / inside
    with pytest.raises(BuildError) as raised:
        build(project_options(project, out=out), now=NOW)
    where = "a folder a build reads" if inside == "catalogs" else f"inside {inside.split('/')[0]}, which a build reads"
    assert raised.value.lines == [f"{inside}: {where}; put the output outside every input folder"]
    assert not os.path.lexists(out.parent / f".{out.name}.gpumem")


def test_a_language_listed_twice(root):
    edit(root / SITE, "  - {code: de, name: Deutsch}\n", "  - {code: de, name: Deutsch}\n  - {code: de, name: Deutsch}\n")
    line = line_of(root / SITE, "  - {code: de, name: Deutsch}") + 1
    assert problems(root) == [f"content/site.yaml:{line}: site: languages.code: language 'de' is listed twice"]


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_prices_from_a_device(root, device):
    """An endless device read to its end never ends: the command's timeout in cli() means it was read."""
    done = cli(root, "--prices", device)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"{device}: not a regular file\n1 problem found; nothing was written.\n"


def test_an_oversized_file_is_not_read(root):
    with (root / MODELS).open("a") as handle:
        handle.write("#" * 20_000_001)
    assert problems(root) == ["catalogs/models.yaml: larger than 20,000,000 bytes; not read"]


def test_the_command_line_shows_the_problem_not_a_traceback(root):
    (root / GPUS).write_bytes(b"\xfe")
    done = cli(root)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == "catalogs/gpus.yaml:1: not UTF-8 text (byte 0xfe at offset 0)\n1 problem found; nothing was written.\n"
    assert not (root / "site").exists()


def test_gather_reports_every_file_at_once(root):
    (root / GPUS).write_text("")
    (root / HOME).write_text("---\n---\n")
    with pytest.raises(BuildError) as raised:
        gather(options_for(root), now=NOW)
    assert raised.value.lines == [
        "catalogs/gpus.yaml:1: empty file (expected YAML fields)",
        "content/en/home.md:2: front matter: empty (expected title and description)",
    ]


def test_an_overlong_deployment_source_is_the_one_problem_named(root):
    """A deployment block that fails to read is named once; the blocks checked against its formats (the old
    calculator links, the speed rules) wait for it rather than report formats as unknown."""
    rules = root / "catalogs/rules.yaml"
    length = len(yaml.safe_load(rules.read_text())["deployment"]["runtime"]["source"])
    edit(rules, '    llamacpp_copies: 4\n    source: "', '    llamacpp_copies: 4\n    source: "' + "x" * 2_000)
    line = line_of(rules, "    llamacpp_copies: 4") + 1
    message = f"expected at most 2,000 characters, got {2_000 + length:,}"
    assert problems(root) == [f"catalogs/rules.yaml:{line}: rules: deployment.runtime.source: {message}"]
