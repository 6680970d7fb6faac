"""The Python API: msa_gpu.align on paths, SeqRecords and pairs; Biopython out."""

import numpy as np
from Bio import AlignIO, SeqIO

import msa_gpu
from msa_gpu.io import read_aligned


def test_paths_records_and_pairs_give_the_same_alignment(refs):
    path = refs / "BB11001.tfa"
    by_path = msa_gpu.align(path, backend="cpu", mode="fast")
    records = list(SeqIO.parse(path, "fasta"))
    by_records = msa_gpu.align(records, backend="cpu", mode="fast")
    by_pairs = msa_gpu.align([(r.description, str(r.seq)) for r in records], backend="cpu", mode="fast")
    assert by_path.rows() == by_records.rows() == by_pairs.rows()
    assert list(by_records.sequences.names) == [r.description for r in records]


def test_biopython_views_and_writing(refs, tmp_path):
    res = msa_gpu.align(refs / "BB11001.tfa", backend="cpu", mode="fast")
    msa = res.to_msa()
    assert [str(r.seq).encode() for r in msa] == res.rows()
    aln = res.to_alignment()
    assert aln.shape == (len(res.rows()), len(res.rows()[0]))
    assert [str(s.seq) for s in aln.sequences] == [r.replace(b"-", b"").decode() for r in res.rows()]
    leaves = sorted(t.name for t in res.tree.get_terminals())
    assert leaves == sorted(res.sequences.names)
    res.write(tmp_path / "out.aln")
    assert len(AlignIO.read(tmp_path / "out.aln", "clustal")) == len(res.rows())
    res.write(tmp_path / "out.fa")
    assert read_aligned(tmp_path / "out.fa")[1] == res.rows()
    assert res.distances is not None and np.allclose(res.distances.values, res.distances.values.T)
