"""The vectorised pairwise TSV writer against the per-pair reference it
replaced, byte for byte."""

import gzip

import numpy as np
import pytest
from typer.testing import CliRunner

from msa_gpu.backend import pairwise
from msa_gpu.backend.pairwise import PairAlignments, PairMode, PairScoring, align_pairs, all_pairs
from msa_gpu.frontends.msagpu import app
from msa_gpu.io import make_sequences, read_sequences, tables, write_pairs_tsv, write_text

MODES = ["global", "semiglobal", "local"]


def reference_write_pairs_tsv(result, seqs, path, cigar=False):
    """The per-pair writer that `write_pairs_tsv` replaced (the oracle)."""
    head = ["name_a", "name_b", "score", "identity", "aligned_length", "a_begin", "a_end", "b_begin", "b_end"]
    ident, length = result.identity, result.aligned_length

    def emit(h) -> None:
        h.write("\t".join(head + (["cigar"] if cigar else [])) + "\n")
        for k, (i, j) in enumerate(result.pairs):
            row = [seqs.names[i], seqs.names[j], f"{result.scores[k]:g}", f"{ident[k]:.4f}", str(length[k]),
                   str(result.start[k, 0]), str(result.end[k, 0]), str(result.start[k, 1]), str(result.end[k, 1])]
            if cigar:
                row.append(result.cigar(k))
            h.write("\t".join(row) + "\n")

    write_text(path, emit)


def assert_same_bytes(tmp_path, result, seqs, cigar, name="p.tsv"):
    new, ref = tmp_path / f"new-{name}", tmp_path / f"ref-{name}"
    write_pairs_tsv(result, seqs, new, cigar=cigar)
    reference_write_pairs_tsv(result, seqs, ref, cigar=cigar)
    assert new.read_bytes() == ref.read_bytes()
    return new.read_bytes()


def random_sequences(rng, count, letters="ACGT", kind="dna"):
    names = [f"s{k} sample {k % 3}" if k % 2 else f"s{k}" for k in range(count)]
    raw = ["".join(rng.choice(list(letters), int(rng.integers(1, 40)))).encode() for _ in range(count)]
    return make_sequences(names, raw, kind)


@pytest.mark.parametrize("cigar", [False, True])
@pytest.mark.parametrize("mode", MODES)
def test_equals_reference_every_mode(tmp_path, mode, cigar):
    rng = np.random.default_rng(11)
    seqs = random_sequences(rng, 13)
    res = all_pairs(seqs, PairScoring(mode, "NUC.4.4", 2.5, 0.5), traceback=True, backend="cpu")
    assert_same_bytes(tmp_path, res, seqs, cigar)


@pytest.mark.parametrize("mode", MODES)
def test_equals_reference_protein_long_runs(tmp_path, mode):
    rng = np.random.default_rng(5)
    letters = "ARNDCQEGHILKMFPSTWYV"
    base = "".join(rng.choice(list(letters), 300))
    raw = [base, base[:150] + base[180:], "W" * 120 + base[:30], "Y"]
    seqs = make_sequences(["a", "b c", "d\tx", "é\udcff"], [r.encode() for r in raw], "protein")
    res = all_pairs(seqs, PairScoring(mode, "BLOSUM62", 11, 1), traceback=True, backend="cpu")
    assert (res.runs >> 2).max() >= 100  # multi-digit run lengths
    assert_same_bytes(tmp_path, res, seqs, True)


def test_local_with_nothing_aligned(tmp_path):
    seqs = make_sequences(["a", "b"], [b"AAAA", b"CCCC"], "dna")
    res = all_pairs(seqs, PairScoring("local"), traceback=True, backend="cpu")
    assert res.runs_offsets.tolist() == [0, 0]
    out = assert_same_bytes(tmp_path, res, seqs, True)
    assert out.decode().splitlines()[1] == "a\tb\t0\t0.0000\t0\t0\t0\t0\t0\t"


def test_single_pair_and_no_pairs(tmp_path):
    seqs = make_sequences(["x y", "z"], [b"ACGTAC", b"ACTTAC"], "dna")
    one = align_pairs(seqs, [(1, 0)], PairScoring("global"), traceback=True, backend="cpu")
    assert assert_same_bytes(tmp_path, one, seqs, True).count(b"\n") == 2
    none = align_pairs(seqs, np.empty((0, 2), np.int64), PairScoring("global"), traceback=True, backend="cpu")
    assert assert_same_bytes(tmp_path, none, seqs, True, "none.tsv").count(b"\n") == 1


@pytest.mark.parametrize("rows", [1, 2, 7])
def test_chunk_boundaries(tmp_path, monkeypatch, rows):
    rng = np.random.default_rng(3)
    seqs = random_sequences(rng, 9)
    res = all_pairs(seqs, PairScoring("local", "NUC.4.4", 1.0, 1.0), traceback=True, backend="cpu")
    monkeypatch.setattr(tables, "TSV_CHUNK_ROWS", rows)
    assert_same_bytes(tmp_path, res, seqs, True)


def test_synthetic_numbers(tmp_path, monkeypatch):
    """Scores over the whole %g range (exponents, negatives), identities near
    rounding ties, run lengths of every digit count."""
    rng = np.random.default_rng(1)
    P, n = 3000, 40
    seqs = make_sequences([f"q{k}" for k in range(n)], [b"A"] * n, "dna")
    counts = rng.integers(0, 6, P)
    off = np.concatenate([[0], np.cumsum(counts)])
    lengths = (10 ** rng.uniform(0, 9, off[-1])).astype(np.uint32)
    runs = lengths << 2 | rng.integers(0, 3, off[-1]).astype(np.uint32)
    score = rng.choice([0, 1, -1, 5, 150, -250, 99999999, 123456789, -10**12, 10**15], P) + rng.integers(-3, 4, P)
    aligned = rng.integers(0, 40000, P)
    start = rng.integers(0, 10**7, (P, 2))
    res = PairAlignments(rng.integers(0, n, (P, 2)), PairMode.global_, score, start + rng.integers(0, 99, (P, 2)),
                         start, runs, off, rng.integers(0, aligned + 1), aligned, rng.integers(0, 10**6, P))
    monkeypatch.setattr(tables, "TSV_CHUNK_ROWS", 1000)
    assert_same_bytes(tmp_path, res, seqs, True)


def test_gzip_output(tmp_path):
    rng = np.random.default_rng(2)
    seqs = random_sequences(rng, 6)
    res = all_pairs(seqs, PairScoring("semiglobal"), traceback=True, backend="cpu")
    write_pairs_tsv(res, seqs, tmp_path / "p.tsv.gz", cigar=True)
    reference_write_pairs_tsv(res, seqs, tmp_path / "r.tsv", cigar=True)
    assert gzip.decompress((tmp_path / "p.tsv.gz").read_bytes()) == (tmp_path / "r.tsv").read_bytes()


def test_cli_to_stdout(refs, tmp_path):
    cli = CliRunner().invoke(app, ["pairwise", str(refs / "BB11001.tfa"), "--mode", "local", "--traceback",
                                   "--backend", "cpu"])
    assert cli.exit_code == 0, cli.output
    seqs = read_sequences(refs / "BB11001.tfa")
    res = all_pairs(seqs, pairwise.default_scoring(seqs, "local"), traceback=True, backend="cpu")
    reference_write_pairs_tsv(res, seqs, tmp_path / "r.tsv", cigar=True)
    assert cli.stdout_bytes == (tmp_path / "r.tsv").read_bytes()


def test_needs_a_traceback(tmp_path):
    seqs = make_sequences(["a", "b"], [b"ACGT", b"ACGT"], "dna")
    res = all_pairs(seqs, PairScoring("global"), backend="cpu")
    with pytest.raises(ValueError, match="traceback"):
        write_pairs_tsv(res, seqs, tmp_path / "p.tsv")
    assert not (tmp_path / "p.tsv").exists()
