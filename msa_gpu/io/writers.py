"""Writers: alignments in every output format. Output goes to a temporary
file in the target's folder and is renamed into place, so a failure never
leaves a partial file."""

from __future__ import annotations

import contextlib
import gzip
import io as _io
import os
import stat
import sys
import tempfile
from pathlib import Path

from Bio import AlignIO
from Bio.Align import MultipleSeqAlignment
from Bio.Seq import Seq
from Bio.SeqRecord import SeqRecord

from msa_gpu.alphabet import SeqType
from msa_gpu.errors import InputError, PipeClosed
from msa_gpu.io.formats import ENCODING, ERRORS, NAME_LIMIT, OutFormat


def _records(names: list[str], rows: list[bytes]) -> list[SeqRecord]:
    """Biopython records named by each name's first word (the formats other than FASTA)."""
    recs = []
    for name, row in zip(names, rows):
        ident = name.split(None, 1)[0] if name.strip() else name
        recs.append(SeqRecord(Seq(row.decode("ascii")), id=ident, description=""))
    return recs


def _write_msf(handle, recs: list[SeqRecord], seqtype: SeqType) -> None:
    """GCG MSF (Biopython reads MSF but does not write it)."""

    def checksum(s: str) -> int:
        return sum(((i % 57) + 1) * ord(c) for i, c in enumerate(s.upper())) % 10000

    length = len(recs[0].seq) if recs else 0
    kind = "P" if seqtype is SeqType.protein else "N"
    rows = [str(r.seq).replace("-", ".") for r in recs]
    total = sum(checksum(r) for r in rows) % 10000
    width = max([len(r.id) for r in recs] + [10])
    handle.write("!!AA_MULTIPLE_ALIGNMENT 1.0\n" if kind == "P" else "!!NA_MULTIPLE_ALIGNMENT 1.0\n")
    handle.write(f"\n  msagpu.msf  MSF: {length}  Type: {kind}  Check: {total}  ..\n\n")
    for r, row in zip(recs, rows):
        handle.write(f" Name: {r.id:<{width}}  Len: {length}  Check: {checksum(row)}  Weight: 1.00\n")
    handle.write("\n//\n\n")
    for start in range(0, length, 50):
        for r, row in zip(recs, rows):
            chunk = row[start:start + 50]
            blocks = " ".join(chunk[k:k + 10] for k in range(0, len(chunk), 10))
            handle.write(f"{r.id:<{width}}  {blocks}\n")
        handle.write("\n")


def strict_names(names: list[str], width: int = 10, replace: bool = True) -> list[str]:
    """Names of at most ``width`` characters for strict PHYLIP: each first
    word cut to fit, characters PHYLIP readers split on replaced by '_'
    (unless ``replace`` is off: MAFFT's --phylipout keeps them), repeats
    made unique by a numbered tail.

    >>> strict_names(["sp|P12345|KIN_HUMAN kinase", "sp|P12345|KIN_MOUSE", "x"])
    ['sp_P12345_', 'sp_P123451', 'x']
    """
    out, used = [], set()
    for name in names:
        word = name.split(None, 1)[0] if name.strip() else "seq"
        base = ("".join(c if c.isalnum() or c in "_.-" else "_" for c in word) if replace else word)[:width] or "seq"
        cand, k = base, 0
        while cand in used:
            k += 1
            tail = str(k)
            cand = base[: width - len(tail)] + tail
        used.add(cand)
        out.append(cand)
    return out


def posterior_line(scores) -> str:
    """Column confidences in [0, 1] as HMMER writes posterior probabilities
    (a ``#=GC PP_cons`` line): '0'-'9' for the nearest tenth below 0.95,
    '*' from 0.95.

    >>> posterior_line([0.0, 0.04, 0.05, 0.5, 0.94, 0.95, 1.0])
    '00159**'
    """
    return "".join("*" if v >= 0.95 else str(min(int(v * 10 + 0.5), 9)) for v in scores)


#: Clustal's residue groups for its conservation line (ClustalW and Clustal
#: Omega): ':' where a column's residues all lie in one strong group, '.' in
#: one weak group.
CLUSTAL_STRONG = ("STA", "NEQK", "NHQK", "NDEQ", "QHRK", "MILV", "MILF", "HY", "FYW")
CLUSTAL_WEAK = ("CSA", "ATV", "SAG", "STNK", "STPA", "SGND", "SNDEQK", "NDEQHK", "NEQHRK", "FVLIM", "HFY")


def clustal_consensus(rows: list[bytes], seqtype: SeqType = SeqType.protein) -> str:
    """Clustal's conservation line: '*' where a column holds one residue in
    every row (no gaps; case ignored), and for protein ':' where its residues
    all lie in one of Clustal's strong groups, '.' in one weak group; else a
    space.

    >>> clustal_consensus([b"MKV-A", b"MRI-S", b"MKL-G"])
    '*:: .'
    >>> clustal_consensus([b"ACGT", b"ACGA"], SeqType.dna)
    '*** '
    """
    out = []
    for col in zip(*(r.upper() for r in rows)):
        kinds = set(col)
        if not rows or b"-"[0] in kinds or b"."[0] in kinds:
            out.append(" ")
        elif len(kinds) == 1:
            out.append("*")
        elif seqtype is not SeqType.protein:
            out.append(" ")
        else:
            letters = {chr(c) for c in kinds}
            out.append(":" if any(letters <= set(g) for g in CLUSTAL_STRONG) else
                       "." if any(letters <= set(g) for g in CLUSTAL_WEAK) else " ")
    return "".join(out)


def render_alignment(names: list[str], rows: list[bytes], fmt: OutFormat,
                     seqtype: SeqType = SeqType.protein, column_scores=None, comment: str | None = None,
                     width: int = 0) -> str:
    """The alignment as text in ``fmt``. Formats other than FASTA keep each
    name's first word, which must then be non-empty and distinct (strict
    PHYLIP: `strict_names`). Clustal output carries Clustal's conservation
    line (`clustal_consensus`). Stockholm output carries ``column_scores``
    (one a column, in [0, 1]), if given, as its ``#=GC PP_cons`` line, and
    ``comment`` (one line: the family's recipe), if given, as a ``#=GF CC``
    line under its header. ``width``: FASTA's residues a line (0:
    `FASTA_WIDTH`); Vienna output never wraps."""
    fmt = OutFormat(fmt)
    if fmt in (OutFormat.fasta, OutFormat.vienna):  # the streamed writer's text (Biopython's took 1 s for 10,000 rows)
        out = _io.StringIO()
        stream_fasta(out, names, rows, width if fmt is OutFormat.fasta else -1)
        return out.getvalue()
    if fmt is OutFormat.phylip_strict:
        names = strict_names(names)
    recs = _records(names, rows)
    if fmt is OutFormat.nexus:
        molecule = {SeqType.protein: "protein", SeqType.rna: "RNA"}.get(seqtype, "DNA")
        for rec in recs:
            rec.annotations["molecule_type"] = molecule
    limit = NAME_LIMIT.get(fmt)
    seen: dict[str, str] = {}
    for name, rec in zip(names, recs):
        key = rec.id[:limit] if limit else rec.id
        if not key:
            raise InputError(f"{fmt.value} output needs a name for every sequence; use FASTA output")
        if key in seen:
            raise InputError(f"{fmt.value} output keeps {key!r} for both {seen[key]!r} and {name!r}; "
                             "use FASTA output or distinct names")
        seen[key] = name
    handle = _io.StringIO()
    if fmt is OutFormat.msf:
        _write_msf(handle, recs, seqtype)
    else:
        bio = {"phylip": "phylip-relaxed", "phylip-strict": "phylip"}.get(fmt.value, fmt.value)
        msa = MultipleSeqAlignment(recs)
        if fmt is OutFormat.stockholm and column_scores is not None:
            msa.column_annotations["posterior_probability"] = posterior_line(column_scores)
        if fmt is OutFormat.clustal:
            msa.column_annotations["clustal_consensus"] = clustal_consensus(rows, seqtype)
        AlignIO.write(msa, handle, bio)
    text = handle.getvalue()
    if fmt is OutFormat.stockholm and comment:
        head, _, body = text.partition("\n")
        text = f"{head}\n#=GF CC {' '.join(comment.split())}\n{body}"
    return text


def stream_efa(handle, labels: list[str], names, replicates) -> None:
    """An ensemble as MUSCLE 5's Ensemble FASTA: for each replicate a line
    ``<label`` and then its aligned FASTA (``replicates``: each one's rows).

    >>> import io
    >>> h = io.StringIO(); stream_efa(h, ["none.0", "tree.1"], ["a", "b"], [[b"AC", b"A-"], [b"AC", b"-A"]])
    >>> h.getvalue().splitlines()
    ['<none.0', '>a', 'AC', '>b', 'A-', '<tree.1', '>a', 'AC', '>b', '-A']
    """
    for label, rows in zip(labels, replicates, strict=True):
        handle.write(f"<{label}\n")
        stream_fasta(handle, names, rows)


#: Width of a strict PHYLIP name (MAFFT's --phylipout without --namelength).
PHYLIP_NAME_WIDTH = 10


def phylip_names(names: list[str], width: int = PHYLIP_NAME_WIDTH) -> list[str]:
    """Each name's first word cut to ``width`` characters, as MAFFT cuts it
    (`strict_names` keeping every character); where the cut (or the input)
    makes a name equal to an earlier one, its tail becomes a number (1, 2,
    ...) so that every row keeps a name of its own.

    >>> phylip_names(["seq_longname_a desc", "seq_longname_b", "seq_longname_c", "x"])
    ['seq_longna', 'seq_longn1', 'seq_longn2', 'x']
    """
    return strict_names(names, width, replace=False)


def phylip_text(names: list[str], rows: list[bytes], width: int = PHYLIP_NAME_WIDTH) -> str:
    """The alignment as MAFFT's --phylipout writes it: a ``' nseq ncols'``
    line, then blocks of 50 columns in groups of 10, each row's name
    (`phylip_names`) padded to ``width`` characters in the first block and
    blanks in the others, a blank line after each block. With the default
    width this is strict PHYLIP (Biopython's ``phylip`` reads it).

    >>> print(phylip_text(["a", "b"], [b"ACGTACGTACGT", b"ACGT-CGTACGT"]), end="")
     2 12
    a          ACGTACGTAC GT
    b          ACGT-CGTAC GT
    <BLANKLINE>
    """
    ncols = len(rows[0]) if rows else 0
    labels = [n.ljust(width) for n in phylip_names(names, width)]
    lines = [f" {len(rows)} {ncols}"]
    for start in range(0, ncols, 50):
        for label, row in zip(labels, rows):
            text = row[start:start + 50].decode("ascii")
            groups = " ".join(text[k:k + 10] for k in range(0, len(text), 10))
            lines.append(f"{label if start == 0 else ' ' * width} {groups}")
        lines.append("")
    return "\n".join(lines) + "\n"


#: Residues per line of FASTA output (Biopython's FASTA writer wraps at 60 too).
FASTA_WIDTH = 60


def stream_fasta(handle, names, rows, width: int = 0) -> None:
    """Write aligned FASTA row by row (``rows`` may be a generator), the same
    text `render_alignment` gives for FASTA, without holding it in memory;
    ``width`` residues a line (0: `FASTA_WIDTH`; negative: each row on one
    line, as Vienna output)."""
    width = width or FASTA_WIDTH
    for name, row in zip(names, rows, strict=True):
        handle.write(">" + name + "\n")
        text = row.decode("ascii")
        if width < 0:
            handle.write(text + "\n")
            continue
        for start in range(0, len(text), width):
            handle.write(text[start:start + width] + "\n")


def write_alignment(
    names: list[str],
    rows: list[bytes],
    path: str | os.PathLike | None,
    fmt: OutFormat,
    seqtype: SeqType = SeqType.protein,
) -> None:
    """Write an alignment to ``path`` (stdout when None or ``-``); nothing is
    written unless the whole text could be made."""
    text = render_alignment(names, rows, fmt, seqtype)
    write_text(path, lambda handle: handle.write(text))


def process_umask() -> int:
    """This process's umask (read by setting it, and set back at once)."""
    umask = os.umask(0)
    os.umask(umask)
    return umask


def _is_device(target: Path) -> bool:
    """Whether ``target`` (links followed) exists and is neither a regular file
    nor a folder: a device or a pipe, which a rename would replace."""
    try:
        mode = os.stat(target).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def write_text(path: str | os.PathLike | None, emit, compress: bool = False, stdout=None,
               umask: int | None = None) -> None:
    """Call ``emit(handle)`` on standard output (``stdout``, a binary stream;
    default this process's), or on a temporary file renamed to ``path`` once
    ``emit`` has succeeded (gzip-compressed when ``path`` ends in ``.gz`` or
    ``compress`` asks; permissions follow ``umask``, default this process's,
    as for any new file). A symbolic link to a file (or to nothing yet) is
    written through, as a shell's ``>`` writes, not replaced: the file it
    names is made in its own folder."""
    if path is None or str(path) == "-":  # a reader that closes the pipe (head) ends the run: `PipeClosed`
        stdout = sys.stdout.buffer if stdout is None else stdout
        out = _io.TextIOWrapper(stdout, encoding=ENCODING, errors=ERRORS, newline="\n", write_through=True)
        try:
            emit(out)
            out.flush()
        except BrokenPipeError:
            raise PipeClosed("standard output: the reader closed the pipe") from None
        finally:
            with contextlib.suppress(OSError, ValueError):  # (flushing what a closed pipe refused)
                out.detach()
        return
    target = Path(path)
    if _is_device(target):  # /dev/null, /dev/stdout, a named pipe: written in place, never replaced
        with open(target, "wb") as raw:
            binary = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if compress or target.suffix.lower() == ".gz" else raw
            with binary, _io.TextIOWrapper(binary, encoding=ENCODING, errors=ERRORS, newline="\n") as handle:
                emit(handle)
        return
    if target.is_symlink():
        target = Path(os.path.realpath(target))
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    try:
        os.fchmod(fd, 0o666 & ~(process_umask() if umask is None else umask))
        raw = os.fdopen(fd, "wb")
        binary = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if compress or target.suffix.lower() == ".gz" else raw
        with raw, binary, _io.TextIOWrapper(binary, encoding=ENCODING, errors=ERRORS, newline="\n") as handle:
            emit(handle)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
