"""What the host gets besides the rendered site: the project's pass-through folder, and publishing
to GitHub Pages.

The pass-through folder (`host/` in the project, `--host DIR` to point elsewhere) holds the host's
own files: `CNAME`, `.nojekyll`, `_redirects`, a `.well-known/` folder, anything a host reads from
the site. Every build copies them into its version of the site as they are (Hugo's, Zola's and
MkDocs' static folders play this part), so they never live only in the output folder, which each
build replaces. A name the build writes itself is an error naming both, except `_headers`: the
folder's file is appended to the generated rules (assets.headers), which cover the rendered files
and the assets only, so rules for the host's own files belong there.

`gpumem gh-deploy` commits the live version of the site to a branch (gh-pages) and pushes it, with
ghp-import as `mkdocs gh-deploy` does, from the project's repository: the output folder needs no
`.git` of its own (and could not keep one).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

from gpumem.catalog.files import input_tree
from gpumem.errors import BuildError
from gpumem.output.tree import ancestors, plain

HEADERS = "_headers"


def host_files(folder: Path) -> dict[str, bytes]:
    """Every file below the pass-through folder by its path there, through links as every input is
    listed (catalog/files.py); none when there is no such folder."""
    return {item.relative: item.path.read_bytes() for item in input_tree(folder) if item.path.is_file() and plain(item.relative)}


def with_host_files(files: dict[str, bytes], folder: Path, label: str) -> dict[str, bytes]:
    """The build's files and the pass-through folder's, `_headers` joined; a BuildError naming every
    file of the folder that the build writes too, or that stands where the build needs a folder."""
    extra = host_files(folder)
    folders, own_folders = ancestors(files), ancestors(extra)
    clash = [name for name in extra if name != HEADERS and (name in files or name in folders)]
    clash += [name for name in own_folders if name in files]
    if clash:
        raise BuildError([f"{label}/{name}: the build writes {name} itself; rename or remove it in {label}/" for name in sorted(clash)])
    joined = {**files, **extra}
    if HEADERS in extra and HEADERS in files:
        joined[HEADERS] = files[HEADERS] + extra[HEADERS]
    return joined


def gh_deploy(version: Path, project: Path, remote: str, branch: str, message: str) -> None:
    """Commit a version of the site (a folder) as the whole of `branch` and push it to `remote`,
    from the project's repository."""
    from ghp_import import GhpError, ghp_import

    try:
        with contextlib.chdir(project):
            ghp_import(os.fspath(version), mesg=message, remote=remote, branch=branch, push=True, nojekyll=True)
    except GhpError as error:
        raise BuildError([f"gh-deploy: {str(error.message).strip()}"], "nothing was published.") from None
    except subprocess.CalledProcessError as error:
        raise BuildError(
            [f"gh-deploy: `git push {remote} {branch}` failed (exit status {error.returncode})"], "nothing was pushed."
        ) from None
    except OSError as error:
        raise BuildError([f"gh-deploy: cannot run git: {error.strerror}"], "nothing was published.") from None
