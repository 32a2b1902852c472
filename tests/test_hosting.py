"""The host's own files (the pass-through folder, copied into every version) and publishing a
version to a GitHub Pages branch with ghp-import, into a local bare repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gpumem.errors import BuildError
from gpumem.output.hosting import gh_deploy, with_host_files
from gpumem.output.versions import Output

SITE = {"index.html": b"home", "en/index.html": b"hello", "_headers": b"/\n  Cache-Control: public, max-age=0, must-revalidate\n"}


def host_folder(root: Path, files: dict[str, bytes]) -> Path:
    for relative, content in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_bytes(content)
    return root


def test_the_host_s_files_join_the_build_s_and_its_headers_follow_the_generated_ones(tmp_path):
    rules = b"/.well-known/*\n  Access-Control-Allow-Origin: *\n"
    host = host_folder(
        tmp_path / "host", {"CNAME": b"gpumem.example.org\n", ".well-known/security.txt": b"Contact: x\n", "_headers": rules}
    )
    assert with_host_files(SITE, host, "host") == {
        **SITE,
        "CNAME": b"gpumem.example.org\n",
        ".well-known/security.txt": b"Contact: x\n",
        "_headers": SITE["_headers"] + rules,
    }
    assert with_host_files(SITE, tmp_path / "none", "host") == SITE  # no folder: nothing to add


def test_a_linked_folder_of_the_host_s_is_copied_as_the_no_change_check_lists_it(tmp_path):
    kept = host_folder(tmp_path / "kept", {"security.txt": b"Contact: x\n"})
    host = host_folder(tmp_path / "host", {"CNAME": b"gpumem.example.org\n"})
    (host / ".well-known").symlink_to(kept)
    assert with_host_files(SITE, host, "host") == {**SITE, "CNAME": b"gpumem.example.org\n", ".well-known/security.txt": b"Contact: x\n"}


def test_a_host_file_where_the_build_writes_is_an_error_naming_both(tmp_path):
    host = host_folder(tmp_path / "host", {"index.html": b"mine", "en": b"a file where a folder goes", "CNAME/x": b"a folder"})
    with pytest.raises(BuildError) as raised:
        with_host_files({**SITE, "CNAME": b"the build's"}, host, "host")
    assert raised.value.lines == [
        "host/CNAME: the build writes CNAME itself; rename or remove it in host/",
        "host/en: the build writes en itself; rename or remove it in host/",
        "host/index.html: the build writes index.html itself; rename or remove it in host/",
    ]


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder that is a Git repository whose `origin` is a bare repository beside it."""
    monkeypatch.setenv("GIT_COMMITTER_NAME", "gpumem test")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "test@example.org")
    git("init", "-q", "--bare", "remote.git", cwd=tmp_path)
    (tmp_path / "project").mkdir()
    git("init", "-q", cwd=tmp_path / "project")
    git("remote", "add", "origin", str(tmp_path / "remote.git"), cwd=tmp_path / "project")
    return tmp_path / "project"


def published_version(out: Path, files: dict[str, bytes]) -> Path:
    with Output(out) as output:
        output.publish(files)
    return out.resolve()


def test_gh_deploy_commits_the_version_as_the_whole_branch_and_pushes_it(repository, tmp_path):
    remote = tmp_path / "remote.git"
    gh_deploy(published_version(tmp_path / "site", SITE), repository, "origin", "gh-pages", "first")
    assert git("ls-tree", "-r", "--name-only", "gh-pages", cwd=remote).split() == [".nojekyll", "_headers", "en/index.html", "index.html"]
    gh_deploy(published_version(tmp_path / "site", {"index.html": b"home 2", "CNAME": b"x\n"}), repository, "origin", "gh-pages", "second")
    assert git("ls-tree", "-r", "--name-only", "gh-pages", cwd=remote).split() == [".nojekyll", "CNAME", "index.html"]
    assert git("show", "gh-pages:index.html", cwd=remote) == "home 2"
    assert git("log", "--format=%s", "gh-pages", cwd=remote).split() == ["second", "first"]


def test_gh_deploy_outside_a_repository_says_so(tmp_path):
    (tmp_path / "project").mkdir()
    with pytest.raises(BuildError) as raised:
        gh_deploy(published_version(tmp_path / "site", SITE), tmp_path / "project", "origin", "gh-pages", "m")
    assert raised.value.lines == ["gh-deploy: not a git repository (or any of the parent directories): .git"]
    assert raised.value.message.endswith("\n1 problem found; nothing was published.")
