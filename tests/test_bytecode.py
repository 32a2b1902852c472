"""Jinja's bytecode cache (pages/bytecode.py): a compiled template is read back only when its seal
holds; a tampered file is ignored, compiled again and written anew."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import jinja2
import pytest
from jinja2.bccache import Bucket

from gpumem.commands.build import build
from gpumem.options import template_cache
from gpumem.pages.bytecode import SEAL_BYTES, cache_key
from gpumem.pages.render import Renderer

from .conftest import NOW, tree
from .project import fixture_options

TEMPLATE = "home.html"


def cached(cache: Path, name: str = TEMPLATE) -> tuple[Renderer, Bucket, Path]:
    """A fresh renderer on the cache, the bucket it reads for a layout, and that bucket's file."""
    renderer = Renderer(fixture_options().templates, fixture_options().translations, (), cache)
    env = renderer.env
    assert renderer.compiled is not None and env.loader is not None
    source, filename, _ = env.loader.get_source(env, name)
    bucket = renderer.compiled.get_bucket(env, name, filename, source)
    return renderer, bucket, Path(renderer.compiled._get_cache_filename(bucket))


def as_jinja_writes_it(cache: Path, path: Path) -> bytes:
    """home.html's file replaced by one Jinja's own cache would run: its checksum, other code."""
    renderer, bucket, _ = cached(cache)
    poisoned = Bucket(renderer.env, bucket.key, bucket.checksum)
    poisoned.code = renderer.env.compile("POISONED", TEMPLATE, TEMPLATE)
    return poisoned.bytecode_to_string()


def seal_kept_code_swapped(cache: Path, path: Path) -> bytes:
    return path.read_bytes()[:SEAL_BYTES] + as_jinja_writes_it(cache, path)


def another_template_s_sealed_file(cache: Path, path: Path) -> bytes:
    return cached(cache, "gpu.html")[2].read_bytes()


@pytest.mark.parametrize("tampered", [as_jinja_writes_it, seal_kept_code_swapped, another_template_s_sealed_file])
def test_a_tampered_cache_file_is_ignored_compiled_again_and_written_anew(tmp_path, monkeypatch, tampered: Callable):
    monkeypatch.setenv("GPUMEM_CACHE", str(tmp_path / "cache"))
    build(fixture_options(out=tmp_path / "clean", force=True), now=NOW)
    cache = template_cache(fixture_options().project)
    assert cache is not None
    _, bucket, path = cached(cache)
    assert bucket.code is not None  # the build's own file is read back
    path.write_bytes(tampered(cache, path))
    assert cached(cache)[1].code is None
    compiled: list[str | None] = []
    real = jinja2.Environment.compile
    monkeypatch.setattr(
        jinja2.Environment, "compile", lambda self, source, name=None, *rest: compiled.append(name) or real(self, source, name, *rest)
    )
    build(fixture_options(out=tmp_path / "again", force=True), now=NOW)
    assert compiled == [TEMPLATE]
    assert tree(tmp_path / "again") == tree(tmp_path / "clean")
    assert cached(cache)[1].code is not None  # sealed anew


def test_the_key_is_made_once_and_a_short_one_seals_nothing(tmp_path):
    key = cache_key(tmp_path)
    assert key is not None and len(key) == 32 and cache_key(tmp_path) == key
    assert [p.name for p in tmp_path.iterdir()] == ["key"]
    (tmp_path / "key").write_bytes(b"short")
    assert cache_key(tmp_path) is None
