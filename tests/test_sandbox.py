"""The content sandbox's bounds (pages/sandbox.py): a placeholder that would compute a huge value is
refused before it computes it, a content file's text is bounded, and a content file that renders too
long is stopped; each names the content file and the placeholder's line, exit code 1 (issue 21)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

from gpumem.commands.build import build
from gpumem.errors import BuildError
from gpumem.pages import sandbox

from .conftest import NOW, edit, options_for
from .project import REPO

HOME = "content/en/home.md"
AFTER_FRONT_MATTER = "right now.\n---\n"  # the end of home.md's front matter: a placeholder after it is on line 7
NESTED_LOOPS = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"  # 10**10 steps


@pytest.fixture
def root(inputs: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(inputs)
    return inputs


def problems(root: Path, text: str) -> list[str]:
    """The problems of a build whose home page has `text` after its front matter (line 7)."""
    edit(root / HOME, AFTER_FRONT_MATTER, AFTER_FRONT_MATTER + text + "\n")
    with pytest.raises(BuildError) as raised:
        build(options_for(root), now=NOW)
    assert not (root / "site").exists()
    return raised.value.lines


REFUSED = "content/en/home.md:7: template: not allowed in content: "


def rendered(source: str, seconds: float | None = None, **names: str) -> str:
    """A content template's text, rendered with `names` in the content sandbox as the file page.md."""
    env = sandbox.ContentSandbox(seconds=seconds, autoescape=True)  # as pages/render.py makes it
    env.bound_filters()
    return env.render_file(env.compile(source, name="page.md", filename="page.md"), names, "page.md")


@pytest.mark.parametrize(
    "placeholder, message",
    [
        ("{{ 7**(7**10) }}", "7 ** 282475249 would have about 238,719,279 digits (at most 1,000)"),
        ("{{ 10**1001 }}", "10 ** 1001 would have about 1,001 digits (at most 1,000)"),
        ("{{ (10**600) * (10**600) }}", "a number of 601 digits * a number of 601 digits would have about 1,200 digits (at most 1,000)"),
        ('{{ "abc" * 10**9 }}', "a string of 3 characters * 1000000000 would be 3,000,000,000 characters long (at most 1,000,000)"),
        ("{{ 2000000 * [1] }}", "a list of 1 item * 2000000 would be 2,000,000 items long (at most 1,000,000)"),
        (
            '{{ ("x" * 600000) + ("y" * 600000) }}',
            "a string of 600,000 characters + a string of 600,000 characters would be 1,200,000 characters long (at most 1,000,000)",
        ),
        ('{{ "%0999999999d" % 1 }}', "a format width of 999999999 (at most 1,000,000)"),
        ('{{ "%.*f" % (10**7, 1.5) }}', "a format width of 10000000 (at most 1,000,000)"),
        ('{{ "x".center(10**9) }}', "str.center with a width of 1000000000 (at most 1,000,000)"),
        ('{{ "{:>999999999}".format(1) }}', "str.format with a width of 999999999 (at most 1,000,000)"),
        ('{{ "x"|center(10**9) }}', "the center filter with a width of 1000000000 (at most 1,000,000)"),
        ('{{ "%999999999d"|format(1) }}', "the format filter with a width of 999999999 (at most 1,000,000)"),
        ('{% for i in range(100000) %}{{ "x" * 1000 }}{% endfor %}', "its text would pass 10,000,000 characters"),
        ('{% set s = "x" * 1000000 %}{{ s ~ s }}', "joining 2 pieces of 2,000,000 characters with ~ (at most 1,000,000)"),
        (
            '{% macro double(s, n) %}{{ double(s ~ s, n - 1) if n else s|length }}{% endmacro %}{{ double("x", 40) }}',
            "joining 2 pieces of 1,048,576 characters with ~ (at most 1,000,000)",
        ),
        ('{% set s = "x" * 1000000 %}{{ "%s%s" % (s, s) }}', "a format of 2,000,004 characters (at most 1,000,000)"),
    ],
)
def test_a_placeholder_past_a_bound_is_refused_before_it_computes(placeholder, message):
    with pytest.raises(SecurityError) as raised:
        rendered(placeholder)
    assert str(raised.value) == message


def test_a_refusal_names_the_content_file_and_the_placeholder_s_line(root):
    assert problems(root, '{{ "abc" * 10**9 }}') == [
        REFUSED + "a string of 3 characters * 1000000000 would be 3,000,000,000 characters long (at most 1,000,000)"
    ]


def test_arithmetic_within_the_bounds_renders_as_before():
    source = '{{ 2**10 * 3 }} {{ "%5.1f" % 2.5 }} {{ "ab" * 3 }} {{ [1, 2] + [3] }} {{ 10**999 > 0 }} {{ "%s!"|format("a") }} {{ "x"|center(3) }}'
    assert rendered(source) == "3072   2.5 ababab [1, 2, 3] True a!  x "
    joins = '{{ "a" ~ 1 ~ "b" }} {{ (x|safe) ~ y }} {{ x ~ y }} {% autoescape false %}{{ (x|safe) ~ y }} {{ x ~ y }}{% endautoescape %}'
    jinja = ImmutableSandboxedEnvironment(autoescape=True).from_string(joins).render(x="<b>", y="<i>")
    assert rendered(joins, x="<b>", y="<i>") == jinja == "a1b <b>&lt;i&gt; &lt;b&gt;&lt;i&gt; <b><i> <b><i>"


def test_a_content_file_past_the_time_bound_is_stopped_at_its_line(root, monkeypatch):
    """A bound every real content file renders well within, even on a loaded machine (0.2 s once stopped a French
    guide under two test workers), and a loop that no machine finishes within it (10**10 steps)."""
    monkeypatch.setattr(sandbox, "SECONDS", 2.0)
    assert problems(root, NESTED_LOOPS) == [
        "content/en/home.md:7: template: stopped after 2 s, the longest one content file may take to render"
    ]


def test_the_time_bound_names_the_line_running_in_a_content_macro():
    source = "one\n{% macro spin() %}\n" + NESTED_LOOPS + "\n{% endmacro %}\n{{ spin() }}\n"
    with pytest.raises(sandbox.RenderTimeout) as raised:
        rendered(source, seconds=0.1)
    assert (str(raised.value), raised.value.line) == ("stopped after 0.1 s, the longest one content file may take to render", 3)
    assert rendered("{{ 1 + 1 }}") == "2"  # nothing was left pending in this thread


def test_the_command_refuses_a_runaway_power_at_once(root):
    """Issue 21: `{{ 7**(7**10) }}` ran past 150 s; the command's timeout is far beyond a build."""
    edit(root / HOME, AFTER_FRONT_MATTER, AFTER_FRONT_MATTER + "{{ 7**(7**10) }}\n")
    command = [sys.executable, "-m", "gpumem", "--project", str(REPO), "build", "--catalogs", "catalogs", "--content", "content"]
    done = subprocess.run([*command, "--out", "site"], cwd=root, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        REFUSED + "7 ** 282475249 would have about 238,719,279 digits (at most 1,000)\n1 problem found; nothing was written.\n"
    )
