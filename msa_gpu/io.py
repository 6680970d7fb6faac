"""The only module that reads or writes files (Biopython underneath).

Output goes to a temporary file in the target's folder and is renamed into
place, so a failure never leaves a partial file.
"""

from __future__ import annotations

import enum
import gzip
import zlib
import io as _io
import os
import sys
import tempfile
from pathlib import Path

from Bio import AlignIO, SeqIO
from Bio.Align import MultipleSeqAlignment
from Bio.Seq import Seq
from Bio.SeqRecord import SeqRecord

from .alphabet import GAP_CHARS, SeqType, alphabet_for, detect, encode
from .errors import InputError
from .types import Sequences

ENCODING = "utf-8"
ERRORS = "surrogateescape"  # names round-trip byte for byte


class OutFormat(str, enum.Enum):
    fasta = "fasta"
    clustal = "clustal"
    phylip = "phylip"
    stockholm = "stockholm"
    msf = "msf"
    nexus = "nexus"
    phylip_strict = "phylip-strict"  # 10-character names, made unique; the map goes beside the file


EXTENSIONS = {
    ".fa": OutFormat.fasta, ".fasta": OutFormat.fasta, ".fas": OutFormat.fasta,
    ".afa": OutFormat.fasta, ".fna": OutFormat.fasta, ".faa": OutFormat.fasta,
    ".aln": OutFormat.clustal, ".clustal": OutFormat.clustal,
    ".phy": OutFormat.phylip, ".phylip": OutFormat.phylip,
    ".sto": OutFormat.stockholm, ".stk": OutFormat.stockholm,
    ".msf": OutFormat.msf,
    ".nex": OutFormat.nexus, ".nexus": OutFormat.nexus, ".nxs": OutFormat.nexus,
}


def format_for(path: str | os.PathLike | None, outfmt: OutFormat | None) -> OutFormat:
    """The output format: ``outfmt`` if given, else from the file extension,
    else FASTA.

    >>> format_for("x.aln", None).value
    'clustal'
    >>> format_for("x.txt", None).value
    'fasta'
    """
    if outfmt is not None:
        return OutFormat(outfmt)
    if path is None or str(path) == "-":
        return OutFormat.fasta
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    return EXTENSIONS.get(suffixes[-1] if suffixes else "", OutFormat.fasta)


def _read_text(path: str | os.PathLike) -> str:
    if str(path) == "-":
        data = sys.stdin.buffer.read()
    else:
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read {path}: {exc.strerror}") from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"{path}: corrupt gzip data ({exc})") from None
    return data.decode(ENCODING, ERRORS)


def parse_fasta(text: str, source: str = "input") -> tuple[list[str], list[bytes]]:
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
        if title in seen:
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
    return Sequences(tuple(names), tuple(raw), tuple(codes), seqtype, alphabet)


def read_sequences(path: str | os.PathLike, seqtype: SeqType = SeqType.auto, any_symbol: bool = False) -> Sequences:
    """Read unaligned FASTA from a path, ``-`` (stdin) or a gzip file."""
    names, raw = parse_fasta(_read_text(path), str(path))
    try:
        return make_sequences(names, raw, seqtype, any_symbol)
    except InputError as exc:  # name the file too: batch mode reads many
        raise InputError(f"{path}: {exc}") from None


FASTA_SUFFIXES = (".fa", ".fasta", ".fas", ".afa", ".faa", ".fna", ".tfa", ".seq")


def expand_inputs(inputs: list[str]) -> list[str]:
    """Paths to align: a folder stands for its FASTA files (sorted), a
    ``.txt``/``.list`` file that is not FASTA for the paths it lists one per
    line (relative to it)."""
    out: list[str] = []
    if inputs.count("-") > 1:
        raise InputError("standard input ('-') can be given only once")
    for item in inputs:
        p = Path(item)
        if item != "-" and p.is_dir():
            found = sorted(str(f) for f in p.iterdir()
                           if f.is_file() and f.name.lower().removesuffix(".gz").endswith(FASTA_SUFFIXES))
            if not found:
                raise InputError(f"{item}: no FASTA files in this folder")
            out.extend(found)
        elif p.suffix.lower() in (".txt", ".list") and not _read_text(p).lstrip().startswith(">"):
            lines = [line.strip() for line in _read_text(p).splitlines()]
            out.extend(str(p.parent / line) for line in lines if line and not line.startswith("#"))
        else:
            out.append(item)
    if not out:
        raise InputError("no input files")
    return out


def output_name(path: str, fmt: OutFormat) -> str:
    """File name for ``path``'s alignment in an output folder.

    >>> output_name("data/BB11001.tfa.gz", OutFormat.clustal)
    'BB11001.aln'
    """
    name = Path(path).name
    if name.lower().endswith(".gz"):
        name = name[:-3]
    for suffix in FASTA_SUFFIXES:
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
            break
    ext = {OutFormat.fasta: ".fa", OutFormat.clustal: ".aln", OutFormat.phylip: ".phy",
           OutFormat.stockholm: ".sto", OutFormat.msf: ".msf", OutFormat.nexus: ".nex",
           OutFormat.phylip_strict: ".phy"}[OutFormat(fmt)]
    return name + ext


def read_aligned(path: str | os.PathLike) -> tuple[list[str], list[bytes]]:
    """Read an aligned FASTA file: titles and gapped rows (as bytes)."""
    text = _read_text(path)
    if not text.lstrip().startswith(">"):
        raise InputError(f"{path}: not FASTA")
    names, rows = [], []
    for rec in SeqIO.parse(_io.StringIO(text.lstrip()), "fasta"):
        names.append(rec.description)
        rows.append(str(rec.seq).encode(ENCODING, ERRORS).translate(None, b" \t\r"))
    if not names:
        raise InputError(f"{path}: no sequences found")
    return names, rows


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


#: Longest name each format keeps (Biopython's Clustal writer cuts at 30).
NAME_LIMIT = {OutFormat.clustal: 30}


def strict_names(names: list[str], width: int = 10) -> list[str]:
    """Names of at most ``width`` characters for strict PHYLIP: each first
    word cut to fit, characters PHYLIP readers split on replaced by '_',
    repeats made unique by a numbered tail.

    >>> strict_names(["sp|P12345|KIN_HUMAN kinase", "sp|P12345|KIN_MOUSE", "x"])
    ['sp_P12345_', 'sp_P123451', 'x']
    """
    out, used = [], set()
    for name in names:
        base = "".join(c if c.isalnum() or c in "_.-" else "_" for c in (name.split(None, 1)[0] if name.strip()
                                                                         else "seq"))[:width] or "seq"
        cand, k = base, 0
        while cand in used:
            k += 1
            tail = str(k)
            cand = base[: width - len(tail)] + tail
        used.add(cand)
        out.append(cand)
    return out


def render_alignment(names: list[str], rows: list[bytes], fmt: OutFormat,
                     seqtype: SeqType = SeqType.protein) -> str:
    """The alignment as text in ``fmt``. Formats other than FASTA keep each
    name's first word, which must then be non-empty and distinct (strict
    PHYLIP: `strict_names`)."""
    fmt = OutFormat(fmt)
    if fmt is OutFormat.fasta:  # the streamed writer's text (Biopython's took 1 s for 10,000 rows)
        out = _io.StringIO()
        stream_fasta(out, names, rows)
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
        AlignIO.write(MultipleSeqAlignment(recs), handle, bio)
    return handle.getvalue()


#: Residues per line of FASTA output (Biopython's FASTA writer wraps at 60 too).
FASTA_WIDTH = 60


def stream_fasta(handle, names, rows) -> None:
    """Write aligned FASTA row by row (``rows`` may be a generator), the same
    text `render_alignment` gives for FASTA, without holding it in memory."""
    for name, row in zip(names, rows, strict=True):
        handle.write(">" + name + "\n")
        text = row.decode("ascii")
        for start in range(0, len(text), FASTA_WIDTH):
            handle.write(text[start:start + FASTA_WIDTH] + "\n")


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


def write_text(path: str | os.PathLike | None, emit) -> None:
    """Call ``emit(handle)`` on stdout, or on a temporary file renamed to
    ``path`` once ``emit`` has succeeded (gzip-compressed when ``path`` ends in
    ``.gz``; permissions follow the umask, as for any new file)."""
    if path is None or str(path) == "-":
        out = _io.TextIOWrapper(sys.stdout.buffer, encoding=ENCODING, errors=ERRORS, newline="\n", write_through=True)
        emit(out)
        out.flush()
        out.detach()
        return
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        raw = os.fdopen(fd, "wb")
        binary = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if target.suffix.lower() == ".gz" else raw
        with raw, binary, _io.TextIOWrapper(binary, encoding=ENCODING, errors=ERRORS, newline="\n") as handle:
            emit(handle)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_core(path: str | os.PathLike) -> str:
    """A core mask: one line of 0/1."""
    text = _read_text(path).strip()
    if not text or set(text) - {"0", "1"}:
        raise InputError(f"{path}: a core mask must be one line of 0 and 1")
    return text
