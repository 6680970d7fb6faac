import gzip
import io

import pytest
from Bio import Align, AlignIO

from msa_gpu.alphabet import SeqType
from msa_gpu.errors import InputError
from msa_gpu.io import OutFormat, format_for, make_sequences, read_sequences, write_alignment

FASTA = ">seq one|x=1  \tdesc\nMKV-LA\naa\n>s2\nmkvla\n"


def test_read_keeps_names_case_and_strips_gaps(tmp_path):
    p = tmp_path / "in.fa"
    p.write_text(FASTA)
    s = read_sequences(p)
    assert s.names == ("seq one|x=1  \tdesc", "s2")
    assert s.raw == (b"MKVLAaa", b"mkvla")
    assert s.seqtype is SeqType.protein


def test_gzip_and_stdin(tmp_path, monkeypatch):
    p = tmp_path / "in.fa.gz"
    p.write_bytes(gzip.compress(FASTA.encode()))
    assert read_sequences(p).raw[0] == b"MKVLAaa"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(FASTA.encode())))
    assert read_sequences("-").names[1] == "s2"


def test_non_ascii_names_round_trip_byte_for_byte(tmp_path):
    raw = ">caf\xc3\xa9 \xff\xfe odd\nACGT\n>b\nACGA\n".encode("latin-1")
    p = tmp_path / "in.fa"
    p.write_bytes(raw)
    s = read_sequences(p)
    out = tmp_path / "out.fa"
    write_alignment(list(s.names), [b"ACGT", b"ACGA"], out, OutFormat.fasta, s.seqtype)
    assert out.read_bytes().split(b"\n")[0] == b">caf\xc3\xa9 \xff\xfe odd"


@pytest.mark.parametrize("text, message", [
    ("", "no sequences"),
    ("ACGT\n", "not FASTA"),
    (">a\nMK1V\n", "sequence 'a': invalid protein character '1' at position 3"),
    (">a\nACGT\n>b\n---\n", "sequence 'b' is empty"),
])
def test_bad_input_messages(tmp_path, text, message):
    p = tmp_path / "in.fa"
    p.write_text(text)
    with pytest.raises(InputError, match=message):
        read_sequences(p)


def test_detection_and_override():
    assert make_sequences(["a"], [b"ACGUACGU"]).seqtype is SeqType.rna
    assert make_sequences(["a"], [b"acgtnacgt"]).seqtype is SeqType.dna
    assert make_sequences(["a"], [b"ACGT"], SeqType.protein).seqtype is SeqType.protein
    with pytest.raises(InputError, match="invalid nucleotide character '7' at position 2"):
        make_sequences(["a"], [b"A7GT"], SeqType.dna)
    # any letter is accepted and echoed: one outside the IUPAC codes is scored as N
    seqs = make_sequences(["a"], [b"AEGX"], SeqType.dna)
    assert seqs.raw == (b"AEGX",) and seqs.codes[0].tolist()[1] == seqs.alphabet.letters.index("N")
    # --anysymbol: any character is the wildcard
    assert make_sequences(["a"], [b"MK#V"], SeqType.protein, any_symbol=True).codes[0][2] == 22


@pytest.mark.parametrize("name, fmt", [("x.fa", "fasta"), ("x.afa", "fasta"), ("x.aln", "clustal"),
                                       ("x.clustal", "clustal"), ("x.phy", "phylip"), ("x.sto", "stockholm"),
                                       ("x.msf", "msf"), ("x.unknown", "fasta"), (None, "fasta")])
def test_format_from_extension(name, fmt):
    assert format_for(name, None).value == fmt


ROWS = [b"MKV-LAaa", b"mkvlla--", b"-KVLLAAA"]
NAMES = ["alpha desc", "beta", "gamma"]


@pytest.mark.parametrize("fmt, biopython", [("clustal", "clustal"), ("phylip", "phylip-relaxed"),
                                            ("stockholm", "stockholm"), ("msf", "msf"), ("fasta", "fasta")])
def test_every_format_reads_back_with_biopython(tmp_path, fmt, biopython):
    out = tmp_path / "out"
    write_alignment(NAMES, ROWS, out, OutFormat(fmt))
    if biopython == "msf":  # only the newer Bio.Align API reads MSF
        aln = Align.read(str(out), "msf")
        ids, rows = [s.id for s in aln.sequences], [aln[i] for i in range(len(ROWS))]
    else:
        aln = AlignIO.read(str(out), biopython)
        ids, rows = [r.description if fmt == "fasta" else r.id for r in aln], [str(r.seq) for r in aln]
    assert [r.upper().replace(".", "-") for r in rows] == [r.decode().upper() for r in ROWS]
    assert ids[1:] == ["beta", "gamma"]
    assert ids[0] == ("alpha desc" if fmt == "fasta" else "alpha")


def test_failed_write_leaves_no_file(tmp_path):
    out = tmp_path / "out.phy"
    with pytest.raises(InputError):
        write_alignment(["a x", "a y"], [b"AC", b"AC"], out, OutFormat.phylip)
    assert list(tmp_path.iterdir()) == []


def test_probable_mistakes_are_warned_not_silent(tmp_path):
    """A single sequence, a sequence of '*' only and letters the alphabet
    lacks each get a warning (the CLI prints it unless --quiet)."""
    import warnings

    from msa_gpu.io import make_sequences

    cases = [(["a"], [b"MKVL"], "one sequence"), (["a", "b"], [b"MKVL", b"***"], "no residue letters"),
             (["a", "b"], [b"MKUVL", b"MKVL"], "'U' (1 sequence; first in 'a' at position 3) scored as X"),
             (["a", "b"], [b"MKVL", b"MKIL"], None)]
    for names, raw, said in cases:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            make_sequences(names, raw, "protein")
        messages = [str(w.message) for w in caught]
        assert any(said in m for m in messages) if said else not messages, messages


def test_a_letter_in_both_cases_counts_one_sequence_at_its_first_position():
    from msa_gpu.alphabet import PROTEIN, input_warnings

    said = input_warnings(["a", "b"], [b"MKuUV", b"MKVL"], PROTEIN)
    assert said == ["'U' (1 sequence; first in 'a' at position 3) scored as X: the protein alphabet has no such letter"]


def test_output_to_a_pipe_writes_into_it_and_keeps_it(tmp_path):
    """``-o /dev/null`` or ``-o /dev/stdout`` must write into the device, not
    rename a temporary file over it (a named pipe stands in for the device)."""
    import os
    import stat
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    write_alignment(["a", "b"], [b"MK-V", b"MKLV"], fifo, OutFormat.fasta, SeqType.protein)
    reader.join(timeout=10)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert got and got[0].startswith(b">a\nMK-V")
    assert not [p for p in tmp_path.iterdir() if p.name != "pipe"]  # no temporary file left


def _said(names, raw, seqtype="protein") -> list[str]:
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make_sequences(names, raw, seqtype)
    return [str(w.message) for w in caught]


def test_a_stop_mark_inside_a_protein_is_warned_as_j_is_and_one_at_its_end_is_not():
    """'*' ends many protein FASTA records (a stop codon): taken quietly there,
    one or several (MAFFT says nothing either; it deletes them, msagpu keeps
    every input character). Inside a sequence it is scored as X like 'J', and
    warned once as 'J' is: how many sequences, the first one and position."""
    ok = ["a", "b"], [b"MKVLAW*", b"MKVAW**"]
    assert _said(*ok) == []
    stars = _said(["a", "b", "c"], [b"MKVLAW", b"MK*VA*W*", b"M*KV"])
    assert stars == ["'*' (2 sequences; first in 'b' at position 3) scored as X: a stop mark inside a sequence "
                     "(one at its end is taken quietly)"]
    # 'J' and '*' say the same kind of sentence, one each
    both = _said(["a", "b"], [b"MKJLA*W", b"MKVAW"])
    assert both == ["'*' (1 sequence; first in 'a' at position 6) scored as X: a stop mark inside a sequence "
                    "(one at its end is taken quietly)",
                    "'J' (1 sequence; first in 'a' at position 3) scored as X: the protein alphabet has no such letter"]
    seqs = make_sequences(*ok, "protein")
    assert seqs.raw == (b"MKVLAW*", b"MKVAW**")  # kept, scored as X
    assert seqs.codes[0][-1] == seqs.alphabet.letters.index("X")


def test_the_cli_keeps_stop_marks_and_warns_only_inside(tmp_path):
    from typer.testing import CliRunner

    from msa_gpu.frontends.msagpu import app
    from msa_gpu.io import read_aligned

    for body, warned in [(b">a\nMKTAYIAKQR*\n>b\nMKTAYIAKQ*\n>c\nMKTYIAKQR\n", False),
                         (b">a\nMKTAYIAKQR\n>b\nMKTAY*IAKQ\n>c\nMKTYIAKQR*\n", True)]:
        src, out = tmp_path / "in.fa", tmp_path / "out.fa"
        src.write_bytes(body)
        r = CliRunner().invoke(app, ["align", str(src), "-o", str(out), "--backend", "cpu", "--mode", "fast"])
        assert r.exit_code == 0, r.output
        star = [line for line in r.stderr.splitlines() if "'*'" in line]
        assert star == (["msagpu: '*' (1 sequence; first in 'b' at position 6) scored as X: a stop mark inside a "
                         "sequence (one at its end is taken quietly)"] if warned else [])
        names, rows = read_aligned(out)
        assert [r.replace(b"-", b"") for r in rows] == [line.encode() for line in body.decode().split()[1::2]]
