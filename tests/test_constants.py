"""The constants the CUDA kernels share with their numba twins and GPU
runtimes come from one place, `msa_gpu.kernels.constants` (issue 56): no
``.cu`` file defines one of them itself, the loader hands each file all of
its own, every macro a ``.cu`` file uses is defined somewhere (CI compiles no
CUDA, so a missing one would first fail on a GPU), and the twins' and
runtimes' own copies (module constants, read by importing the twins and by
parsing the runtimes, which need CuPy) equal the single source. Only text and
Python here: no GPU."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from msa_gpu import kernels
from msa_gpu.kernels import constants as C

KERNELS = Path(kernels.__file__).parent
BACKEND = KERNELS.parent / "backend"
CU = sorted(p.stem for p in KERNELS.glob("*.cu"))


def _code(text: str) -> str:
    """C/CUDA text without its comments and string literals."""
    return re.sub(r'"[^"\n]*"', '""', re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", " ", text, flags=re.S)))


#: Type names a declaration of a C variable starts with (the kernels' own typedefs and structs included).
_TYPES = r"(?:int|long|unsigned|signed|short|double|float|char|bool|auto|size_t|u?int[24]|cons_acc|Ring|Diag)"


def _variables(code: str) -> set[str]:
    """Names the code declares as C variables or parameters: in each piece
    between ``;(){},`` that starts with qualifiers and a type, the last name
    before ``=`` or ``[`` (and ``T (&name)[n]`` parameters)."""
    starts = rf"\s*(?:(?:const|static|__shared__|extern|volatile)\s+)*{_TYPES}\b"
    out = set(re.findall(rf"\b{_TYPES}\s*\(&([A-Za-z_]\w*)\)", code))
    for piece in re.split(r"[;(){},]", code):
        if re.match(starts, piece):
            out |= set(re.findall(r"[A-Za-z_]\w*", re.split(r"[=\[]", piece)[0])[-1:])
    return out


def _c_int(expr: str, known: dict[str, int]) -> int | None:
    """The value of a C integer constant expression over ``known`` macros
    (None where it is not one: a function-like or non-integer macro)."""
    expr = re.sub(r"\b(0x[0-9a-fA-F]+|\d+)(?:[uU]?[lL]{0,2}|[lL]{1,2}[uU]?)\b", lambda m: str(int(m[1], 0)),
                  expr.strip())
    expr = re.sub(r"\((?:long long|unsigned|int|long)\)", "", expr)
    names = set(re.findall(r"[A-Za-z_]\w*", expr))
    if not expr or names - known.keys() or not re.fullmatch(r"[\w\s()+\-*/<>%&|~^]+", expr):
        return None
    value = eval(expr.replace("/", "//"), {"__builtins__": {}}, dict(known))  # noqa: S307 (checked above)
    return value if isinstance(value, int) else None


def cu_constants(name: str) -> dict[str, tuple[int | None, bool]]:
    """Every object-like ``#define`` and every ``constexpr`` of ``<name>.cu``:
    name -> (its integer value over the preamble's constants and the file's
    earlier ones, or None; whether it is a default under ``#ifndef NAME``)."""
    lines = _code(kernels.source(name)).splitlines()
    known = dict(C.DEFINES[name])
    out: dict[str, tuple[int | None, bool]] = {}
    for k, line in enumerate(lines):
        m = re.match(r"\s*#\s*define\s+([A-Za-z_]\w*)(?!\()\s*(.*)$", line) or \
            re.match(r"\s*(?:static\s+)?(?:__device__\s+)?constexpr\s+[\w\s]+?\b([A-Za-z_]\w*)\s*=\s*([^;]+);", line)
        if not m:
            continue
        default = k > 0 and re.fullmatch(rf"\s*#\s*ifndef\s+{m[1]}\s*", lines[k - 1]) is not None
        value = _c_int(m[2], known) if m[2] else None
        out[m[1]] = (value, default)
        if value is not None:
            known[m[1]] = value
    return out


def _module_constants(path: Path) -> dict[str, object]:
    """A Python module's top-level constants (``NAME = ...``, ``A, B = x, y``)
    whose values are literals or arithmetic over earlier ones, read from its
    source (the GPU runtimes import CuPy)."""
    env: dict[str, object] = {}

    def value(node):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return env[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        if isinstance(node, ast.BinOp):
            a, b = value(node.left), value(node.right)
            ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                   ast.FloorDiv: lambda: a // b, ast.LShift: lambda: a << b, ast.Div: lambda: a / b}
            return ops[type(node.op)]()
        if isinstance(node, ast.Dict):
            return {value(k): value(v) for k, v in zip(node.keys, node.values)}
        raise KeyError

    for node in ast.parse(path.read_text()).body:
        target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0] if isinstance(node, ast.Assign) \
            else None
        if target is None or node.value is None:
            continue
        try:
            if isinstance(target, ast.Name):
                env[target.id] = value(node.value)
            elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                for t, v in zip(target.elts, node.value.elts):
                    env[t.id] = value(v)
        except (KeyError, TypeError, AttributeError):
            continue
    return env


def runtime_defines() -> dict[str, set[str]]:
    """The names the GPU runtimes define themselves when they load a ``.cu``
    file: the keys of each ``get_function("<file>", ..., {...})`` call's
    defines (a literal, or a module-level dict named there)."""
    out: dict[str, set[str]] = {name: set() for name in CU}
    for path in BACKEND.glob("*.py"):
        tree = ast.parse(path.read_text())
        dicts = {t.id: n.value for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                 for t in ([n.target] if isinstance(n, ast.AnnAssign) else n.targets) if isinstance(t, ast.Name)}
        for call in ast.walk(tree):
            if not (isinstance(call, ast.Call) and getattr(call.func, "id", None) == "get_function"):
                continue
            file = call.args[0].value if call.args and isinstance(call.args[0], ast.Constant) else None
            defines = call.args[2] if len(call.args) > 2 else None
            defines = dicts.get(defines.id) if isinstance(defines, ast.Name) else defines
            if file in out and isinstance(defines, ast.Dict):
                out[file] |= {k.value for k in defines.keys if isinstance(k, ast.Constant)}
    return out


def test_the_parser_reads_defines_constexprs_and_the_runtimes():
    assert _c_int("(32 * R)", {"R": 8}) == 256 and _c_int("(-(1 << 29))", {}) == -(1 << 29)
    assert _c_int("0xffffffffu", {}) == 0xFFFFFFFF and _c_int("1024LL * 1024", {}) == 1 << 20
    assert _c_int("rb[(long long)(c) * 32]", {}) is None and _c_int("__dmul_rn((a), (b))", {}) is None
    kept = cu_constants("kept")
    assert kept["KEPT_CHUNK"] == (C.KEPT_THREADS * C.KEPT_PER_THREAD, False)
    assert cu_constants("lcs")["LCS_WORDS"] == (4, True)
    assert "RB_AT" not in cu_constants("pairwise")  # function-like
    assert runtime_defines()["pairwise"] >= {"MODE", "TRACEBACK", "S16"}
    assert runtime_defines()["lcs"] == {"LCS_WORDS"}
    assert _module_constants(BACKEND / "profile_gpu.py")["SMEM_BYTES"] == 48 * 1024


@pytest.mark.parametrize("name", CU)
def test_no_cu_file_defines_a_shared_constant_itself(name):
    """A shared constant defined in a ``.cu`` file again (even equal, even
    under #ifndef) is a second place that can drift: it must come only from
    the preamble; and each preamble constant is used by its file."""
    own = cu_constants(name)
    assert not set(own) & set(C.DEFINES[name]), f"{name}.cu defines {set(own) & set(C.DEFINES[name])} itself"
    code = _code(kernels.source(name))
    unused = [k for k in C.DEFINES[name] if not re.search(rf"\b{k}\b", code)]
    assert not unused, f"kernels/constants.py gives {name}.cu {unused}, which it does not use"
    runtime = runtime_defines()[name]
    assert not runtime & set(C.DEFINES[name]), f"a runtime defines {runtime & set(C.DEFINES[name])} for {name}.cu"


@pytest.mark.parametrize("name", CU)
def test_every_macro_a_cu_file_uses_is_defined(name):
    """Upper-case names the code of a ``.cu`` file uses are its own macros
    (or optional ones it tests with #ifdef), C variables and parameters,
    template and macro parameters, the preamble's constants or the
    runtimes' defines."""
    code = _code(kernels.source(name))
    declared = set(cu_constants(name)) | set(re.findall(r"#\s*define\s+([A-Za-z_]\w*)\(", code))
    declared |= set(re.findall(r"\bconst(?:expr)?\s+[\w\s\*]*?\b([A-Z][A-Z0-9_]*)\s*=", code))
    declared |= set(re.findall(r"template\s*<[^>]*?\b([A-Z][A-Z0-9_]*)\s*>", code))
    for params in re.findall(r"#\s*define\s+\w+\(([^)]*)\)", code):
        declared |= {p.strip() for p in params.split(",")}
    declared |= set(re.findall(r"#\s*ifn?def\s+(\w+)", code)) | set(re.findall(r"\bdefined\s*\(?\s*(\w+)", code))
    declared |= _variables(code)
    used = set(re.findall(r"\b([A-Z][A-Z0-9_]*)\b", code))
    missing = used - declared - set(C.DEFINES[name]) - runtime_defines()[name]
    assert not missing, f"{name}.cu uses {sorted(missing)}, defined nowhere"


@pytest.mark.parametrize("name", CU)
def test_the_loader_hands_each_file_its_constants_once(name):
    """`kernels.full_source` (what NVRTC compiles): the runtime's defines,
    then each shared constant exactly once with its value, the ones the
    runtime gives left to it."""
    text = kernels.full_source(name, {"ZZ_GIVEN": "7"})
    assert text.endswith(kernels.source(name)) and text.startswith("#define ZZ_GIVEN 7\n")
    head = text[: len(text) - len(kernels.source(name))]
    for k, v in C.DEFINES[name].items():
        found = re.findall(rf"^#define {k} (.+)$", head, re.M)
        assert len(found) == 1 and _c_int(found[0], {}) == v, (k, found)
    if C.DEFINES[name]:
        k = next(iter(C.DEFINES[name]))
        assert f"#define {k} " not in kernels.full_source(name, {k: "1"}).replace(f"#define {k} 1\n", "", 1)


def test_the_twins_and_runtimes_hold_the_single_sources_values():
    """Each Python copy of a shared constant: the numba twins' (imported),
    the GPU runtimes' (parsed), the stage-level codes and fixed point."""
    from msa_gpu.backend import pairwise, pairwise_cpu, pairwise_launch, posterior_cpu, profile_cpu, refine_cpu
    from msa_gpu.progressive.costs import GAP_MODELS
    from msa_gpu.scoring import FRAC_ONE

    profile_gpu = _module_constants(BACKEND / "profile_gpu.py")
    posterior_gpu = _module_constants(BACKEND / "posterior_gpu.py")
    posterior_cu = cu_constants("posterior")
    pairs = {
        "profile_cpu.NEG_INF": (profile_cpu.NEG_INF, C.NEG_INF), "profile_cpu.VEC": (profile_cpu.VEC, C.VEC),
        "profile_cpu.FRAC": (profile_cpu.FRAC, C.FRAC), "refine_cpu.FRAC": (refine_cpu.FRAC, C.FRAC),
        "scoring.FRAC_ONE": (FRAC_ONE, C.FRAC),
        "GAP_MODELS": (GAP_MODELS, {"flat": C.GAP_FLAT, "counts": C.GAP_COUNTS, "exact": C.GAP_EXACT}),
        "profile_gpu.VEC": (profile_gpu["VEC"], C.VEC),
        **{f"profile_gpu.{k}": (profile_gpu[k], getattr(C, k))
           for k in ("DIAG_INTS", "CKPT_INTS", "STAT_COLS", "STAT_LANES", "MERGE_CHUNK")},
        "pairwise_cpu.NEG": (pairwise_cpu.NEG, C.PAIR_NEG),
        "pairwise_cpu modes": ((pairwise_cpu.GLOBAL, pairwise_cpu.SEMIGLOBAL, pairwise_cpu.LOCAL),
                               (C.MODE_GLOBAL, C.MODE_SEMIGLOBAL, C.MODE_LOCAL)),
        "pairwise.MODE_CODE": (sorted(pairwise.MODE_CODE.values()), [C.MODE_GLOBAL, C.MODE_SEMIGLOBAL, C.MODE_LOCAL]),
        "pairwise_launch.STRIP": (pairwise_launch.STRIP, C.STRIP), "pairwise_launch.PAD": (pairwise_launch.PAD, C.PAD),
        "pairwise_launch.WIDE_ROWS": (pairwise_launch.WIDE_ROWS, cu_constants("pairwise")["WIDE_ROWS"][0]),
        "pairwise_launch.WARPS_PER_SM": (pairwise_launch.WARPS_PER_SM,
                                       pairwise_launch.BLOCK // pairwise_launch.WARP * C.PW_MINBLOCKS),
        "pairwise_launch.LIMIT16 < -NEG16": (pairwise_launch.LIMIT16 < -C.NEG16, True),
        "posterior_cpu.M": (posterior_cpu.M, C.MATCH), "posterior_cpu.N_STATES": (posterior_cpu.N_STATES, C.N_STATES),
        "posterior_gpu.NS": (posterior_gpu["NS"], C.N_STATES),
        "posterior_gpu.MAX_THREADS": (posterior_gpu["MAX_THREADS"], C.MAX_WARPS * 32),
        "posterior_gpu.KEPT_CHUNK": (posterior_gpu["KEPT_CHUNK"], cu_constants("kept")["KEPT_CHUNK"][0]),
        "posterior_gpu.CONS_WARPS": (posterior_gpu["CONS_WARPS"], posterior_cu["CONS_WARPS"][0]),
        "posterior_gpu.CONS_TILE": (posterior_gpu["CONS_TILE"], posterior_cu["CONS_TILE"][0]),
    }
    drifted = {k: v for k, v in pairs.items() if v[0] != v[1]}
    assert not drifted, f"(theirs, the single source's): {drifted}"
