"""The family pipeline's seams (issue 59, capability 2): `msa_gpu.ensemble`
and `msa_gpu.distributed` call the aligner's public steps, never its private
methods, and batching for the server is a hook passed to the aligner, not a
thread-local it reads."""

from __future__ import annotations

import ast
from pathlib import Path

from msa_gpu.aligner import Aligner
from msa_gpu.config import AlignerConfig
from msa_gpu.io import make_sequences

PACKAGE = Path(__file__).resolve().parent.parent / "msa_gpu"
CALLERS = [PACKAGE / "ensemble.py", *sorted((PACKAGE / "distributed").glob("*.py"))]


def private_uses(source: str) -> list[str]:
    """Each use of one of `Aligner`'s private attributes (``x._libraries``) in ``source``."""
    private = {name for name in vars(Aligner) if name.startswith("_") and not name.startswith("__")}
    return [ast.unparse(n) for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.Attribute) and n.attr in private]


def test_ensemble_and_distributed_call_public_steps():
    assert {p.name: private_uses(p.read_text()) for p in CALLERS if private_uses(p.read_text())} == {}
    assert private_uses("tree = aligner._align_many(seqs)")  # (the scan sees one)


def test_batching_is_a_hook_passed_in():
    """A plain `align_many` call goes to the aligner's ``batch`` hook; one
    given a tree, distances or a library does not; the aligner keeps no
    thread-local."""
    seqs = make_sequences(["a", "b"], [b"MKTAYIAKQRQISFVKSHFSRQ", b"MKTAYIAKQISFVKSHFSRQ"])
    calls = []

    def hook(aligner, families, recipes):
        calls.append(len(families))
        return ["batched"] * len(families)

    aligner = Aligner(AlignerConfig(backend="cpu"), batch=hook)
    assert aligner.align_many([seqs, seqs]) == ["batched", "batched"] and calls == [2]
    tree = Aligner(AlignerConfig(backend="cpu")).align(seqs).guide_tree
    assert aligner.align(seqs, guide_tree=tree).rows() == Aligner(AlignerConfig(backend="cpu")).align(seqs).rows()
    assert calls == [2] and Aligner(AlignerConfig(backend="cpu")).batch is None
    source = (PACKAGE / "aligner.py").read_text() if (PACKAGE / "aligner.py").exists() else ""
    assert "threading.local" not in source and "gathering" not in source
