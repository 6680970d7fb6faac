"""The typed backend (msa_gpu/backend/interfaces.py): each kernel family's
CPU and GPU modules meet its interface, the backends' namespaces give every
family, and the stages neither branch on the array module nor import a
``*_cpu`` or ``*_gpu`` module. The GPU side is read from its source (ast),
so the checks run without CuPy."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import numpy as np
import pytest

from msa_gpu.backend import backend_named, backend_of, cpu_backend, interfaces

BACKEND = Path(interfaces.__file__).parent
PACKAGE = BACKEND.parent


def _functions(module: str) -> dict[str, ast.FunctionDef]:
    """The top-level functions of ``msa_gpu/backend/<module>.py``, by name."""
    tree = ast.parse((BACKEND / f"{module}.py").read_text())
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


def _members(protocol: type) -> dict[str, inspect.Signature]:
    """A protocol's methods (its bases' too) and their signatures, ``self`` left out."""
    out = {}
    for klass in reversed(protocol.__mro__):
        for name, value in vars(klass).items():
            if inspect.isfunction(value) and not name.startswith("_"):
                sig = inspect.signature(value)
                out[name] = sig.replace(parameters=list(sig.parameters.values())[1:])
    return out


def _mismatch(want: inspect.Signature, got: ast.FunctionDef) -> str | None:
    """Why ``got`` can not be called as ``want`` says (None: it can): the
    interface's positional parameters first, in order, by name; its
    keyword-only ones by name; the implementation's others with defaults."""
    args = got.args
    positional = [a.arg for a in args.posonlyargs + args.args]
    n_defaults = len(args.defaults)
    kwonly = {a.arg: d is not None for a, d in zip(args.kwonlyargs, args.kw_defaults)}
    wanted_pos = [p.name for p in want.parameters.values() if p.kind is p.POSITIONAL_OR_KEYWORD]
    wanted_kw = [p.name for p in want.parameters.values() if p.kind is p.KEYWORD_ONLY]
    if positional[: len(wanted_pos)] != wanted_pos:
        return f"positional parameters {positional} do not begin with {wanted_pos}"
    for name in wanted_kw:
        if name not in positional and name not in kwonly:
            return f"no parameter {name!r}"
    extra = positional[len(wanted_pos):]
    optional = positional[len(positional) - n_defaults:]
    for name in extra:
        if name not in optional and name not in wanted_kw:
            return f"parameter {name!r} has no default"
    for name, has_default in kwonly.items():
        if not has_default and name not in wanted_kw:
            return f"keyword {name!r} has no default"
    return None


FAMILIES = sorted(interfaces.FAMILIES)


@pytest.mark.parametrize("side", [1, 2], ids=["twin", "device"])
@pytest.mark.parametrize("family", FAMILIES)
def test_each_implementation_meets_its_familys_interface(family, side):
    protocol, *modules = interfaces.FAMILIES[family]
    defined = _functions(modules[side - 1])
    for name, sig in _members(protocol).items():
        assert name in defined, f"{modules[side - 1]} has no {name}"
        assert _mismatch(sig, defined[name]) is None, (modules[side - 1], name, _mismatch(sig, defined[name]))


def test_the_signature_check_sees_a_wrong_implementation():
    want = _members(interfaces.PosteriorKernels)["ordered_csr"]
    wrong = ast.parse("def ordered_csr(q, x, p, y, first, n_pairs, longest): pass").body[0]
    assert "do not begin" in _mismatch(want, wrong)
    no_keyword = ast.parse("def flat_posteriors(codes, pairs, init, trans, pair, single, cutoff, tick=None): pass")
    assert "room" in _mismatch(_members(interfaces.PosteriorKernels)["flat_posteriors"], no_keyword.body[0])
    assert _mismatch(want, ast.parse("def ordered_csr(q, x, y, p, first, n_pairs, longest, more=1): pass").body[0]) \
        is None


def _namespace(module: str) -> tuple[set[str], dict[str, str]]:
    """Names backend/<module>.py binds at its top, and the family modules its
    ``__getattr__`` imports when asked for (name -> module)."""
    tree = ast.parse((BACKEND / f"{module}.py").read_text())
    names: set[str] = set()
    lazy: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.FunctionDef):
            names.add(node.name)
            if node.name == "__getattr__":
                for branch in ast.walk(node):
                    if isinstance(branch, ast.If) and isinstance(branch.test, ast.Compare):
                        key = branch.test.comparators[0].value
                        imp = next(n for n in branch.body if isinstance(n, ast.ImportFrom))
                        lazy[key] = imp.names[0].name
    return names, lazy


@pytest.mark.parametrize("side", [1, 2], ids=["twin", "device"])
def test_both_namespaces_give_every_family_and_the_stage_kernels(side):
    names, lazy = _namespace(["cpu", "gpu"][side - 1])
    assert set(_members(interfaces.StageKernels)) <= names  # Backend.ops: free_cached included
    for family, (_, *modules) in interfaces.FAMILIES.items():
        if family in lazy:
            assert lazy[family] == modules[side - 1]
        else:
            assert family in names, family


def test_the_cpu_backend_gives_each_family_its_twin():
    from msa_gpu.backend import cpu, lcs_cpu, pairwise_cpu, posterior_cpu, profile_cpu

    backend = cpu_backend()
    assert backend.ops is cpu and backend.profile is profile_cpu and backend.lcs is lcs_cpu
    assert backend.pairwise is pairwise_cpu and backend.posterior is posterior_cpu
    assert backend.ops.free_cached() is None  # (nothing cached on the host; the GPU empties CuPy's pool)
    assert backend_of(np).name == "cpu" and backend_named("cpu").xp is np
    assert not backend.on_device
    with pytest.raises(ValueError):
        backend_named("tpu")


#: Where the backend is told apart outside msa_gpu/backend: an array
#: module compared with NumPy, or asked for CUDA, or a backend's name
#: compared with a string (`Backend.on_device` says where its arrays live).
BRANCH = re.compile(r"\bxp\s+is\s+(not\s+)?np\b|\bnp\s+is\s+(not\s+)?xp\b|hasattr\(\s*xp\s*,|xp\s*[!=]=\s*np\b"
                    r"|\.name\s*[!=]=\s*[\"'](cpu|gpu)[\"']")
#: A kernel module (a family's side, or a backend's namespace) imported outside msa_gpu/backend.
_KERNELS = sorted({p.stem for p in BACKEND.glob("*_[cg]pu.py")} | {"cpu", "gpu"})
_NAMES = "|".join(_KERNELS)
KERNEL_MODULE = re.compile(rf"\bfrom\s+msa_gpu\.backend\.({_NAMES})\b|\bimport\b.*\b({_NAMES})\b(?!\.)")


def _outside_backend() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if BACKEND not in p.parents]


def offenders(pattern: re.Pattern, paths: list[Path]) -> list[str]:
    out = []
    for path in paths:
        for k, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#")[0]
            if pattern.search(code) and not code.lstrip().startswith(("`", '"', "'")):
                out.append(f"{path.name}:{k}: {line.strip()}")
    return out


def test_no_stage_branches_on_the_array_module():
    assert offenders(BRANCH, _outside_backend()) == []


def test_no_stage_imports_a_kernel_module():
    assert offenders(KERNEL_MODULE, _outside_backend()) == []


def test_cupy_is_imported_only_by_the_backend_the_loader_and_the_device_pool():
    allowed = {PACKAGE / "kernels" / "__init__.py", PACKAGE / "distributed" / "gpus.py"}
    paths = [p for p in _outside_backend() if p not in allowed]
    assert offenders(re.compile(r"^\s*(import\s+cupy|from\s+cupy)"), paths) == []


def test_the_layout_checks_see_a_branch_and_a_kernel_import(tmp_path):
    stage = tmp_path / "stage.py"
    stage.write_text("if xp is not np:\n    from msa_gpu.backend.lcs_gpu import lcs_row_blocks\n"
                     "ok = hasattr(xp, 'cuda')\nfrom msa_gpu.backend import posterior_cpu\n"
                     "gpu = context.backend.name != \"cpu\"\n")
    assert len(offenders(BRANCH, [stage])) == 3
    assert len(offenders(KERNEL_MODULE, [stage])) == 2
