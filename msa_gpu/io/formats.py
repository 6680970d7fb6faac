"""Output formats and file names: the format a path's extension names, and
the name of a family's output in a folder."""

from __future__ import annotations

import enum
import os
from pathlib import Path

from msa_gpu.errors import InputError

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
    vienna = "vienna"  # FASTA with each row on one line (Clustal Omega's --outfmt=vienna)


EXTENSIONS = {
    ".fa": OutFormat.fasta, ".fasta": OutFormat.fasta, ".fas": OutFormat.fasta,
    ".afa": OutFormat.fasta, ".fna": OutFormat.fasta, ".faa": OutFormat.fasta,
    ".aln": OutFormat.clustal, ".clustal": OutFormat.clustal,
    ".phy": OutFormat.phylip, ".phylip": OutFormat.phylip,
    ".sto": OutFormat.stockholm, ".stk": OutFormat.stockholm,
    ".msf": OutFormat.msf,
    ".nex": OutFormat.nexus, ".nexus": OutFormat.nexus, ".nxs": OutFormat.nexus,
    ".vie": OutFormat.vienna, ".vienna": OutFormat.vienna,
}


#: Other spellings of the formats (Clustal Omega's --outfmt, extensions), lower case.
FORMAT_ALIASES = {"fa": OutFormat.fasta, "fas": OutFormat.fasta, "afa": OutFormat.fasta, "clu": OutFormat.clustal,
                  "aln": OutFormat.clustal, "phy": OutFormat.phylip, "st": OutFormat.stockholm,
                  "sto": OutFormat.stockholm, "nex": OutFormat.nexus, "phylip-relaxed": OutFormat.phylip,
                  "gcg": OutFormat.msf, "a2m": OutFormat.fasta, "vie": OutFormat.vienna}


def parse_format(text: str) -> OutFormat:
    """An output format by any of its spellings, in any case.

    >>> parse_format("CLU").value, parse_format("fa").value, parse_format("Phylip-Strict").value
    ('clustal', 'fasta', 'phylip-strict')
    """
    key = text.strip().lower()
    try:
        return OutFormat(key)
    except ValueError:
        pass
    if key in FORMAT_ALIASES:
        return FORMAT_ALIASES[key]
    known = ", ".join(f.value for f in OutFormat)
    raise InputError(f"output format {text!r} is not one msagpu writes ({known})")


def format_for(path: str | os.PathLike | None, outfmt: OutFormat | str | None) -> OutFormat:
    """The output format: ``outfmt`` if given, else from the file extension,
    else FASTA.

    >>> format_for("x.aln", None).value
    'clustal'
    >>> format_for("x.txt", None).value
    'fasta'
    """
    if outfmt is not None:
        return parse_format(outfmt.value if isinstance(outfmt, OutFormat) else outfmt)
    if path is None or str(path) == "-":
        return OutFormat.fasta
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    return EXTENSIONS.get(suffixes[-1] if suffixes else "", OutFormat.fasta)


#: The extension of each format's files in an output folder (`output_name`): one for every format.
OUTPUT_EXTENSIONS = {OutFormat.fasta: ".fa", OutFormat.clustal: ".aln", OutFormat.phylip: ".phy",
                     OutFormat.stockholm: ".sto", OutFormat.msf: ".msf", OutFormat.nexus: ".nex",
                     OutFormat.phylip_strict: ".phy", OutFormat.vienna: ".vie"}


def output_name(path: str, fmt: OutFormat) -> str:
    """File name for ``path``'s alignment in an output folder.

    >>> output_name("data/BB11001.tfa.gz", OutFormat.clustal), output_name("BB11001.fa", OutFormat.vienna)
    ('BB11001.aln', 'BB11001.vie')
    """
    name = Path(path).name
    if name.lower().endswith(".gz"):
        name = name[:-3]
    for suffix in FASTA_SUFFIXES:
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
            break
    return name + OUTPUT_EXTENSIONS[OutFormat(fmt)]


#: Longest name each format keeps (Biopython's Clustal writer cuts at 30).
NAME_LIMIT = {OutFormat.clustal: 30}


FASTA_SUFFIXES = (".fa", ".fasta", ".fas", ".afa", ".faa", ".fna", ".tfa", ".seq")


#: Suffixes of reference alignments (BAliBASE's ``X.ref.fa`` beside its input
#: ``X.tfa``): a folder given as input stands for its FASTA files less these.
REFERENCE_SUFFIXES = (".ref.fa",)


def is_reference(path: str | os.PathLike) -> bool:
    """Whether ``path`` names a reference alignment (`REFERENCE_SUFFIXES`,
    also gzip-compressed).

    >>> is_reference("RV11/BB11001.ref.fa"), is_reference("BB11001.REF.FA.gz"), is_reference("BB11001.tfa")
    (True, True, False)
    """
    return Path(path).name.lower().removesuffix(".gz").endswith(REFERENCE_SUFFIXES)
