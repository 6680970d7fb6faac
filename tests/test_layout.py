"""The package's layout (docs/architecture.md): stage subpackages, no import
circle, no oversized file, and the import layers of pyproject.toml's
import-linter contracts."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "msa_gpu"
STAGES = ("distances", "tree", "progressive", "consistency", "refine")
MAX_LINES = 800


def module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skip


def import_graph(package: Path) -> dict[str, set[str]]:
    """Each module's imports of the package's modules: every import statement,
    at the top or inside a function, except those under ``if TYPE_CHECKING``.
    ``from pkg import name`` counts as an import of ``pkg.name`` where that is
    a module, else of ``pkg``."""
    modules = {module_name(p, package): p for p in package.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        skip = _type_checking_nodes(tree)
        is_package = path.name == "__init__.py"
        deps: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skip or not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    here = name.split(".") if is_package else name.split(".")[:-1]
                    here = here[: len(here) - node.level + 1]
                    base = ".".join(here + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    deps.add(target)
        graph[name] = deps
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_stage_subpackages_exist():
    for stage in STAGES:
        assert (PACKAGE / stage / "__init__.py").is_file(), stage
    for engine in ("backend", "kernels"):
        assert (PACKAGE / engine / "__init__.py").is_file(), engine


def test_no_import_circle():
    graph = import_graph(PACKAGE)
    assert len(graph) > 40
    assert import_cycles(graph) == []


def test_no_python_file_over_the_limit():
    long = {str(p.relative_to(ROOT)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


# The package top holds the public faces and the base every layer stands on
# (API, aligner, recipe, result, types, errors, alphabet, matrices,
# accuracy); everything else lives in the subpackage of what it does.
MAX_TOP_MODULES = 12


def top_modules(package: Path) -> list[str]:
    """The package's modules at its top (not in a subpackage)."""
    return sorted(p.name for p in package.glob("*.py"))


def test_the_package_top_holds_at_most_twelve_modules():
    assert len(top_modules(PACKAGE)) <= MAX_TOP_MODULES, top_modules(PACKAGE)


def test_the_top_count_sees_a_module_added_at_the_top(tmp_path):
    """(The count can fail: one module more at the top of a copy is seen.)"""
    shutil.copytree(PACKAGE, tmp_path / "msa_gpu", ignore=shutil.ignore_patterns("__pycache__"))
    assert len(top_modules(tmp_path / "msa_gpu")) == len(top_modules(PACKAGE))
    (tmp_path / "msa_gpu" / "extra.py").write_text("")
    (tmp_path / "msa_gpu" / "runtime" / "nested.py").write_text("")
    assert top_modules(tmp_path / "msa_gpu") == sorted([*top_modules(PACKAGE), "extra.py"])


def test_the_circle_finder_sees_a_circle_through_a_function_import(tmp_path):
    """(The checks above can fail: a circle made by an import inside a
    function is found, one under TYPE_CHECKING is not.)"""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.b import g\n\ndef f():\n    return g()\n")
    (pkg / "b.py").write_text("def g():\n    from pkg import a\n    return a\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import f\n")
    graph = import_graph(pkg)
    assert graph["pkg.c"] == set()
    assert import_cycles(graph) == [["pkg.a", "pkg.b"]]


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    code = "from importlinter.cli import lint_imports; raise SystemExit(lint_imports(no_cache=True, no_logo=True))"
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_import_layers_hold():
    """pyproject.toml's contracts: front doors above stages, stages above
    engines, engines above types and alphabet; no I/O in the stages; no
    stage imports another's modules, only its package's exports."""
    pytest.importorskip("importlinter")
    run = _lint_imports(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize("module, line, broken", [
    ("types.py", "from msa_gpu.io import write_text\n", "Stages, engines and types do no I/O"),
    ("backend/pairwise.py", "from msa_gpu.progressive import Profile\n", "Front doors above the orchestrator"),
    ("refine/bipartitions.py", "from msa_gpu.progressive.driver import merge_batch\n", "msa_gpu.progressive"),
])
def test_import_layers_catch_a_bad_import(tmp_path, module, line, broken):
    """(The contracts can fail: a copy of the package with one bad import
    breaks the contract that names it.)"""
    pytest.importorskip("importlinter")
    shutil.copytree(PACKAGE, tmp_path / "msa_gpu", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "msa_gpu" / module
    target.write_text(target.read_text() + "\n" + line)
    run = _lint_imports(tmp_path)
    assert run.returncode != 0, run.stdout + run.stderr
    assert "Broken contracts" in run.stdout and broken in run.stdout.split("Broken contracts")[-1], run.stdout
