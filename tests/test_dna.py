"""DNA as well as RNA (issue 57, capability 3): T for U, IUPAC codes, soft-masked
lower case written back as given, a mix of T and U, and reverse complements."""

import random
import shutil
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from msa_gpu.alphabet import detect
from msa_gpu.frontends.msagpu import app
from msa_gpu.distances import reverse_complement
from msa_gpu.io import OutFormat, read_aligned

IUPAC = "RYSWKMBDHVN"


def _family(n: int = 6, length: int = 90, seed: int = 7) -> list[str]:
    """``n`` DNA sequences drawn from one ancestor by substitutions and indels."""
    rng = random.Random(seed)
    base = "".join(rng.choice("ACGT") for _ in range(length))
    out = []
    for _ in range(n):
        s = []
        for c in base:
            r = rng.random()
            if r < 0.06:
                continue
            s.append(rng.choice("ACGT") if r < 0.12 else c + rng.choice("ACGT") if r < 0.16 else c)
        out.append("".join(s))
    return out


def _write(path, seqs: list[str]):
    path.write_text("".join(f">s{i}\n{s}\n" for i, s in enumerate(seqs)))
    return path


def _align(src, tmp_path, *args, fmt: str = "fasta") -> tuple[list[bytes], str]:
    """msagpu align's rows (input order) and its stderr."""
    out = tmp_path / f"{src.stem}.{fmt}.out"
    r = CliRunner().invoke(app, ["align", str(src), "-o", str(out), "--outfmt", fmt, "--backend", "cpu", *args])
    assert r.exit_code == 0, r.output
    return read_aligned(out)[1], r.output


@pytest.mark.parametrize("mode", ["fast", "accurate"])
def test_dna_and_the_same_rna_give_the_same_columns(tmp_path, mode):
    """T and U are one nucleotide: the RNA's rows, U read as T, are the DNA's
    rows, and accurate mode runs ProbConsRNA's pair-HMM for both."""
    dna = _family()
    t_rows, t_said = _align(_write(tmp_path / "t.fa", dna), tmp_path, "--mode", mode)
    u_rows, u_said = _align(_write(tmp_path / "u.fa", [s.replace("T", "U") for s in dna]), tmp_path, "--mode", mode)
    assert all(b"T" not in r for r in u_rows)
    assert [r.replace(b"U", b"T") for r in u_rows] == t_rows
    if mode == "accurate":
        assert "ProbConsRNA pair-HMM" in t_said and "ProbConsRNA pair-HMM" in u_said, (t_said, u_said)


@pytest.mark.parametrize("kind", ["dna", "rna"])
def test_iupac_codes_are_nucleotides(tmp_path, kind):
    """Every IUPAC ambiguity code is a nucleotide letter in DNA and RNA: no
    warning, each kept in its row, and the input read as nucleotides."""
    seqs = _family()
    seqs = [s[:5 + 3 * i] + IUPAC[i] + s[6 + 3 * i:40 + i] + IUPAC[(i + 5) % 11] + s[41 + i:]
            for i, s in enumerate(seqs)]
    seqs[0] = seqs[0][:60] + IUPAC.lower() + seqs[0][71:]  # all eleven, lower case too
    if kind == "rna":
        seqs = [s.replace("T", "U") for s in seqs]
    src = _write(tmp_path / f"{kind}.fa", seqs)
    assert detect([s.encode() for s in seqs]).value == kind
    rows, said = _align(src, tmp_path, "--mode", "accurate")
    assert "scored as" not in said and "invalid" not in said, said
    assert [r.replace(b"-", b"").decode() for r in rows] == seqs


def test_dna_thick_with_iupac_codes_is_detected_as_mafft_detects_it():
    """MAFFT (7.505) reads an input as nucleotides when more than 75% of its
    letters are A, C, G, T, U or N: 77% here, DNA, not protein."""
    seqs = [b"ACGTRYACGTNNNNACGTKMSWACGT", b"ACGTRYACGTNNNNACGTKMSWACGA", b"acgtacgtnnnnacgtkmswacgt"]
    assert detect(seqs).value == "dna"
    assert detect([b"A" * 76 + b"R" * 24]).value == "dna"
    assert detect([b"A" * 75 + b"R" * 25]).value == "protein"
    assert detect([b"MKVLAAGIVGLLLAQEWRST"]).value == "protein"


@pytest.mark.parametrize("fmt", [f.value for f in OutFormat])
def test_soft_masked_lower_case_is_written_back_as_given(tmp_path, fmt):
    """Lower-case (soft-masked) residues come back in lower case, in every
    output format, and align as their upper case do."""
    dna = _family()
    masked = [s[:10 + i] + s[10 + i:30 + i].lower() + s[30 + i:] for i, s in enumerate(dna)]
    rows, _ = _align(_write(tmp_path / "masked.fa", masked), tmp_path, "--mode", "accurate", fmt=fmt)
    plain, _ = _align(_write(tmp_path / "plain.fa", dna), tmp_path, "--mode", "accurate", fmt=fmt)
    assert [r.replace(b"-", b"").decode() for r in rows] == masked
    assert [r.upper() for r in rows] == plain


def test_a_mix_of_t_and_u_is_accepted_as_mafft_accepts_it(tmp_path):
    """MAFFT aligns a file of DNA and RNA rows without a word, U scored as T,
    each row written with its own letters; msagpu does the same."""
    dna = _family()
    mixed = [s.replace("T", "U") if i % 2 else s for i, s in enumerate(dna)]
    src = _write(tmp_path / "mix.fa", mixed)
    assert detect([s.encode() for s in mixed]).value == "dna"
    for mode in ("fast", "accurate"):
        rows, said = _align(src, tmp_path, "--mode", mode, "-q")
        assert said == ""
        assert [r.replace(b"-", b"").decode() for r in rows] == mixed
        assert [r.replace(b"U", b"T") for r in rows] == _align(_write(tmp_path / "t.fa", dna), tmp_path, "--mode",
                                                               mode)[0]
    if shutil.which("mafft"):
        theirs = subprocess.run(["mafft", "--quiet", "--preservecase", str(src)], capture_output=True, check=True)
        assert [r.replace("-", "") for r in _fasta(theirs.stdout)[1]] == mixed


def _fasta(data: bytes) -> tuple[list[str], list[str]]:
    blocks = data.decode().split(">")[1:]
    return [b.split("\n", 1)[0] for b in blocks], ["".join(b.split("\n", 1)[1].split()) for b in blocks]


def _mafft_cli(*args) -> tuple[list[str], list[str]]:
    code = "from msa_gpu.frontends.mafft import main; main()"
    r = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True)
    assert r.returncode == 0, r.stderr
    return _fasta(r.stdout)


@pytest.mark.parametrize("kind", ["dna", "rna"])
def test_adjustdirection_turns_dna_and_rna_keeping_case_and_codes(tmp_path, kind):
    """--adjustdirection turns the reverse-complemented rows back: each turned
    row is its input's reverse complement, soft-masked case and IUPAC codes
    complemented in place, and an RNA row stays RNA (U, as MAFFT writes it)."""
    seqs = [s[:3] + "RYKM" + s[7:20] + s[20:35].lower() + s[35:] for s in _family(seed=11)]
    if kind == "rna":
        seqs = [s.replace("T", "U").replace("t", "u") for s in seqs]
    turned = {1, 4}
    given = [reverse_complement(s.encode()).decode() if i in turned else s for i, s in enumerate(seqs)]
    src = _write(tmp_path / f"{kind}.fa", given)
    names, rows = _mafft_cli("--quiet", "--preservecase", "--adjustdirection", src)
    assert names == [f"_R_s{i}" if i in turned else f"s{i}" for i in range(len(seqs))]
    assert [r.replace("-", "") for r in rows] == seqs
    if kind == "rna":
        assert not any("T" in r.upper() for r in rows)
    if shutil.which("mafft"):
        theirs = _fasta(subprocess.run(["mafft", "--quiet", "--preservecase", "--adjustdirection", str(src)],
                                       capture_output=True, check=True).stdout)
        assert theirs[0] == names
        assert [r.replace("-", "") for r in theirs[1]] == seqs
