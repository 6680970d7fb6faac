"""Readers: sequences (FASTA, gzip or standard input) checked and encoded,
aligned FASTA, core masks, and the list of inputs a batch names."""

from __future__ import annotations

import gzip
import io as _io
import os
import sys
import zlib
from pathlib import Path

from Bio import AlignIO, SeqIO

from msa_gpu.alphabet import GAP_CHARS, SeqType, alphabet_for, detect, encode, input_warnings
from msa_gpu.errors import InputError
from msa_gpu.io.formats import ENCODING, ERRORS, FASTA_SUFFIXES, REFERENCE_SUFFIXES, is_reference
from msa_gpu.io.newick import from_mafft_tree, from_newick
from msa_gpu.types import GuideTree, Sequences


def read_new(path, rows: list[bytes], seqtype="auto", any_symbol: bool = False, stdin=None) -> Sequences:
    """The sequences to add, typed as the existing alignment and they are
    together (a protein fragment of A, C, G and T letters stays protein)."""
    new_names, new_raw = parse_fasta(read_text(path, stdin), str(path))
    if SeqType(seqtype) is SeqType.auto:
        seqtype = detect([r.translate(None, b"-.") for r in rows] + new_raw)
    return make_sequences(new_names, new_raw, seqtype, any_symbol)


def read_text(path: str | os.PathLike, stdin=None, name: str | os.PathLike | None = None) -> str:
    """A text file's contents (gzip-compressed, or standard input for ``-``:
    ``stdin``, a binary stream, default this process's), named ``name`` in
    messages (default ``path``)."""
    name = path if name is None else name
    if str(path) == "-":
        data = (sys.stdin.buffer if stdin is None else stdin).read()
    else:
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read {name}: {exc.strerror}") from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"{name}: corrupt gzip data ({exc})") from None
    return data.decode(ENCODING, ERRORS)


def parse_fasta(text: str, source: str = "input", unique_names: bool = True) -> tuple[list[str], list[bytes]]:
    """Titles (everything after '>') and residues (gaps and whitespace
    removed) of a FASTA text."""
    stripped = text.lstrip()
    if not stripped:
        raise InputError(f"{source}: no sequences found")
    if not stripped.startswith(">"):
        first = stripped.splitlines()[0][:40]
        raise InputError(f"{source}: not FASTA (first line {first!r} does not start with '>')")
    # titles exactly as written (Biopython strips trailing whitespace); one per record
    titles = [line[1:].rstrip("\r") for line in stripped.split("\n") if line.startswith(">")]
    names, raw = [], []
    seen: dict[str, int] = {}
    gapped = 0
    for k, (title, rec) in enumerate(zip(titles, SeqIO.parse(_io.StringIO(stripped), "fasta")), start=1):
        if not title.strip():
            raise InputError(f"{source}: record {k} has no name after '>'")
        if title in seen and unique_names:
            raise InputError(f"{source}: sequence name {title!r} is used twice (records {seen[title]} and {k})")
        seen[title] = k
        text = str(rec.seq).encode(ENCODING, ERRORS).translate(None, b" \t\r")
        residues = text.translate(None, GAP_CHARS)
        if not residues:
            raise InputError(f"{source}: sequence {title!r} is empty (record {k})")
        gapped += len(residues) != len(text)
        names.append(title)
        raw.append(residues)
    if gapped:
        import warnings

        warnings.warn(f"{source}: gaps ('-', '.') removed from {gapped} sequence(s); they are aligned afresh",
                      stacklevel=2)
    return names, raw


def make_sequences(names: list[str], raw: list[bytes], seqtype: SeqType = SeqType.auto,
                   any_symbol: bool = False) -> Sequences:
    """Validate and encode named residues into `Sequences` (``any_symbol``:
    characters outside the alphabet are scored as its wildcard)."""
    if not names:
        raise InputError("no sequences found")
    seqtype = SeqType(seqtype)
    if seqtype is SeqType.auto:
        seqtype = detect(raw)
    alphabet = alphabet_for(seqtype)
    codes = encode(names, raw, alphabet, any_symbol)
    import warnings

    for message in input_warnings(names, raw, alphabet):
        warnings.warn(message, UserWarning, stacklevel=2)
    return Sequences(tuple(names), tuple(raw), tuple(codes), seqtype, alphabet)


def read_sequences(path: str | os.PathLike, seqtype: SeqType = SeqType.auto, any_symbol: bool = False,
                   stdin=None) -> Sequences:
    """Read unaligned FASTA from a path, ``-`` (``stdin``, default this
    process's standard input) or a gzip file."""
    names, raw = parse_fasta(read_text(path, stdin), str(path))
    try:
        return make_sequences(names, raw, seqtype, any_symbol)
    except InputError as exc:  # name the file too: batch mode reads many
        raise InputError(f"{path}: {exc}") from None


def expand_inputs(inputs: list) -> list[str]:
    """Paths to align: a folder stands for its FASTA files (sorted), a
    ``.txt``/``.list`` file that is not FASTA for the paths it lists one per
    line (relative to it). An input is a path, or a path-like found
    elsewhere whose ``str()`` is the path as given (a served request's, in
    its client's folder: `msa_gpu.frontends.job.Placed`); the paths returned
    are named as given, so that messages name them so."""
    out: list[str] = []
    if inputs.count("-") > 1:
        raise InputError("standard input ('-') can be given only once")
    for item in inputs:
        given, found = Path(str(item)), Path(item)
        if item != "-" and found.is_dir():
            files = sorted(str(given / f.name) for f in found.iterdir()
                           if f.is_file() and f.name.lower().removesuffix(".gz").endswith(FASTA_SUFFIXES))
            if not files:
                raise InputError(f"{item}: no FASTA files in this folder")
            out.extend(files)
        elif given.suffix.lower() in (".txt", ".list") and not (text := read_text(found, name=given)).lstrip().startswith(">"):
            lines = [line.strip() for line in text.splitlines()]
            out.extend(str(given.parent / line) for line in lines if line and not line.startswith("#"))
        else:
            out.append(str(item))
    if not out:
        raise InputError("no input files")
    return out


def sniff_format(text: str) -> str:
    """The alignment format of a text by its first line: ``fasta``,
    ``clustal``, ``nexus``, ``stockholm``, ``msf`` or ``phylip`` (a count of
    sequences and of columns).

    >>> sniff_format("CLUSTAL W (1.83) multiple sequence alignment\\n"), sniff_format(" 2 5\\na ACGT-")
    ('clustal', 'phylip')
    """
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    upper = first.upper()
    if first.startswith(">"):
        return "fasta"
    if upper.startswith(("CLUSTAL", "MUSCLE", "PROBCONS")):
        return "clustal"
    if upper.startswith("#NEXUS"):
        return "nexus"
    if upper.startswith("# STOCKHOLM"):
        return "stockholm"
    if upper.startswith(("!!AA_MULTIPLE_ALIGNMENT", "!!NA_MULTIPLE_ALIGNMENT", "PILEUP")) or " MSF:" in upper:
        return "msf"
    if len(first.split()) == 2 and all(x.isdigit() for x in first.split()):
        return "phylip"
    return "fasta"


def read_aligned(path: str | os.PathLike, stdin=None) -> tuple[list[str], list[bytes]]:
    """Read an aligned file in any format msagpu writes (FASTA, Clustal,
    PHYLIP relaxed or strict, NEXUS, Stockholm, MSF; told by its first line):
    titles (FASTA) or names (the other formats) and gapped rows (as bytes,
    gaps ``-``; FASTA rows as written; ``-``: ``stdin``, default this process's)."""
    text = read_text(path, stdin)
    fmt = sniff_format(text)
    if fmt == "fasta":
        if not text.lstrip().startswith(">"):
            raise InputError(f"{path}: not an alignment (FASTA, Clustal, PHYLIP, NEXUS, Stockholm or MSF)")
        names, rows = [], []
        for rec in SeqIO.parse(_io.StringIO(text.lstrip()), "fasta"):
            names.append(rec.description)
            rows.append(str(rec.seq).encode(ENCODING, ERRORS).translate(None, b" \t\r"))
    else:
        names, rows = _read_other(text, fmt, path)
    if not names:
        raise InputError(f"{path}: no sequences found")
    return names, rows


def _read_other(text: str, fmt: str, path) -> tuple[list[str], list[bytes]]:
    """Names and rows of a non-FASTA alignment, by Biopython's readers
    (PHYLIP: relaxed names first, then strict 10-character ones)."""
    tries = ["phylip-relaxed", "phylip"] if fmt == "phylip" else [fmt]
    for k, bio in enumerate(tries):
        try:
            aln = AlignIO.read(_io.StringIO(text), bio)
            break
        except Exception as exc:  # Biopython raises ValueError and others on malformed input
            if k == len(tries) - 1:
                raise InputError(f"{path}: not a readable {fmt} alignment: {exc}") from None
    names = [rec.id for rec in aln]
    rows = [str(rec.seq).encode(ENCODING, ERRORS).replace(b".", b"-") for rec in aln]
    return names, rows


def read_merge_table(path: str | os.PathLike, n: int, stdin=None) -> list[list[int]]:
    """MAFFT's sub-MSA table (``--merge``), read as MAFFT reads it: a line
    per sub-alignment listing its sequences by number (from 1, in the input
    file's order), anything after ``#`` a comment, blank lines skipped.
    Returns each line's 0-based indices; a number that is not one of the
    ``n`` sequences, or one listed twice, is an `InputError` naming it.

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as fh:
    ...     _ = fh.write("1 2 3  # subMSA1\\n\\n5 4 # anything\\n")
    >>> read_merge_table(fh.name, 6)
    [[0, 1, 2], [4, 3]]
    >>> os.unlink(fh.name)
    """
    lines, seen = [], {}
    for k, line in enumerate(read_text(path, stdin).splitlines(), start=1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        group = []
        for f in fields:
            if not f.isdigit() or not 1 <= int(f) <= n:
                raise InputError(f"{path}: line {k}: {f!r} is not a sequence number of the input (1 to {n})")
            if int(f) in seen:
                raise InputError(f"{path}: sequence {f} appears in two sub-alignments (lines {seen[int(f)]} and {k})")
            seen[int(f)] = k
            group.append(int(f) - 1)
        lines.append(group)
    if not lines:
        raise InputError(f"{path}: the merge table lists no sub-alignment")
    return lines


def read_guide_tree(path: str | os.PathLike, names: list[str], fmt: str = "newick", stdin=None) -> GuideTree:
    """A guide tree from a Newick file, its leaves matched to ``names``, or
    (``fmt`` "mafft") from a MAFFT ``--treein`` file over the sequences in
    input order; a file that is not such a tree is an `InputError` naming it
    (``-``: ``stdin``, default this process's)."""
    text = read_text(path, stdin)
    try:
        if fmt == "mafft":
            return from_mafft_tree(text, len(names))
        return from_newick(text, list(names))
    except Exception as exc:  # Biopython's parser and the leaf checks raise several kinds
        raise InputError(f"{path}: not a guide tree for this input: {exc}") from None


def read_core(path: str | os.PathLike) -> str:
    """A core mask: one line of 0/1."""
    text = read_text(path).strip()
    if not text or set(text) - {"0", "1"}:
        raise InputError(f"{path}: a core mask must be one line of 0 and 1")
    return text


def alignable_inputs(inputs: list, on_skip=None) -> list[str]:
    """`expand_inputs` (its inputs paths or path-likes found elsewhere),
    less the reference alignments (`is_reference`: BAliBASE's ``X.ref.fa``
    beside its input ``X.tfa``) a folder holds: they are not aligned, and
    ``on_skip(message)`` says so. (A reference named as an input, or in a
    list file, is aligned.)"""
    paths = expand_inputs(inputs)
    kinds = ", ".join("*" + suffix for suffix in REFERENCE_SUFFIXES)
    skipped: set[str] = set()
    for item in inputs:
        if item == "-" or not Path(item).is_dir():
            continue
        found = expand_inputs([item])
        references = [p for p in found if is_reference(p)]
        if len(references) == len(found):
            raise InputError(f"{item}: no FASTA files to align in this folder, only reference alignments ({kinds})")
        if references and on_skip is not None:
            plural = "s" if len(references) > 1 else ""
            on_skip(f"{item}: skipped {len(references)} reference alignment{plural} ({kinds})")
        skipped.update(references)
    return [p for p in paths if p not in skipped]
