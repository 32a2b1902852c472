"""The package's layout is a contract: each stage imports only the stages below it (import-linter,
configured in pyproject.toml), and no two modules import each other, not even inside a function."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from .project import REPO

PACKAGE = REPO / "generator"


def imported_modules(path: Path, root: Path, name: str) -> set[str]:
    """Every module of the package `name` (rooted at `root`) that the file imports, wherever the
    import stands: at the top, inside a function or under TYPE_CHECKING."""
    here = module_name(path, root, name)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            if base.split(".")[0] != name:
                continue
            for alias in node.names:  # `from pkg import module` names a module; otherwise the module itself
                candidate = f"{base}.{alias.name}"
                found.add(candidate if module_path(candidate, root, name) else base)
    found.discard(here)
    return found


def module_name(path: Path, root: Path, name: str) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join((name, *parts[:-1])) if parts[-1] == "__init__" else ".".join((name, *parts))


def module_path(module: str, root: Path, name: str) -> Path | None:
    relative = Path(*module.split(".")[1:]) if module != name else Path()
    for candidate in (root / relative.with_suffix(".py"), root / relative / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def import_cycles(root: Path, name: str) -> list[list[str]]:
    """Each cycle of imports among the package's modules, once, as the modules in import order."""
    graph = {module_name(path, root, name): imported_modules(path, root, name) for path in sorted(root.rglob("*.py"))}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                cycles.append(path[path.index(target) :] + [target])
            elif target not in state:
                visit(target)
        path.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    return cycles


def test_no_two_modules_import_each_other():
    assert import_cycles(PACKAGE, "gpumem") == []


def test_a_cycle_through_a_function_level_import_is_found(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "sub" / "__init__.py").write_text("")
    (tmp_path / "a.py").write_text("from .sub import b\n")
    (tmp_path / "sub" / "b.py").write_text("def later():\n    from ..c import thing\n")
    (tmp_path / "c.py").write_text("import pkg.a\nthing = 1\n")
    assert import_cycles(tmp_path, "pkg") == [["pkg.a", "pkg.sub.b", "pkg.c", "pkg.a"]]


def test_each_stage_imports_only_the_stages_below_it():
    linter = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(linter), "--no-cache"], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 2 kept, 0 broken." in result.stdout
