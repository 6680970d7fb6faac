"""Alphabets, encoding tables and sequence-type detection.

Residues are encoded as small integers. Protein uses the 23 letters of the
BLOSUM matrices (20 amino acids plus ``B``, ``Z`` and ``X``); ``J``, ``U``,
``O`` and ``*`` are scored as ``X``, with a warning (`input_warnings`),
except a ``*`` that ends a sequence: the stop mark many protein FASTA files
end with, kept in its row and taken without a word (MAFFT deletes every
``*`` without a word; msagpu writes every input character back). Nucleotides use the 15 IUPAC letters of
the NUC.4.4 matrix (``U`` is scored as ``T``). The gap code is the alphabet
size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from msa_gpu.settings.choices import SeqType
from msa_gpu.errors import InputError


@dataclass(frozen=True)
class Alphabet:
    """An encoding: ``letters[code]`` is the scoring letter of ``code``."""

    name: str
    letters: str
    table: np.ndarray  # uint8[256]: byte -> code, 255 = invalid

    @property
    def size(self) -> int:
        return len(self.letters)

    @property
    def gap(self) -> int:
        """The gap code (one past the last residue code)."""
        return len(self.letters)


def _table(letters: str, aliases: dict[str, str]) -> np.ndarray:
    table = np.full(256, 255, dtype=np.uint8)
    for code, ch in enumerate(letters):
        table[ord(ch)] = table[ord(ch.lower())] = code
    for src, dst in aliases.items():
        table[ord(src)] = table[ord(src.lower())] = letters.index(dst)
    return table


PROTEIN = Alphabet(
    "protein",
    "ARNDCQEGHILKMFPSTWYVBZX",
    _table("ARNDCQEGHILKMFPSTWYVBZX", {"J": "X", "U": "X", "O": "X"}),
)
PROTEIN.table[ord("*")] = PROTEIN.letters.index("X")
NUCLEOTIDE = Alphabet(
    "nucleotide",
    "ATGCSWRYKMBVHDN",
    # U is T; any other letter (X, and protein letters in a mostly-ACGT input) is the wildcard N
    _table("ATGCSWRYKMBVHDN", {"U": "T", **{c: "N" for c in "EFIJLOPQXZ"}}),
)

GAP_CHARS = b"-."
_ACGTUN = np.zeros(256, dtype=bool)
for _ch in b"ACGTUNacgtun":
    _ACGTUN[_ch] = True
_TU = {ord("T"): "t", ord("U"): "u"}


def detect(raw: list[bytes]) -> SeqType:
    """Guess the sequence type as MAFFT (7.505) does: nucleotides when more
    than 75% of the letters are A, C, G, T, U or N (so DNA thick with IUPAC
    codes stays DNA), else protein.

    Examples
    --------
    >>> detect([b"ACGTTGCA", b"ACGGT"]).value
    'dna'
    >>> detect([b"ACGUUGCA"]).value
    'rna'
    >>> detect([b"MKVLAAGIVG"]).value
    'protein'
    >>> detect([b"ACGTRYACGTNNNNACGTKMSWACGT"]).value  # 77% ACGTN
    'dna'
    """
    joined = np.frombuffer(b"".join(raw), dtype=np.uint8)
    upper = joined & 0xDF
    letters = joined[(upper >= ord("A")) & (upper <= ord("Z"))]  # MAFFT counts letters only
    if letters.size == 0 or _ACGTUN[letters].mean() <= 0.75:
        return SeqType.protein
    has_u = bool((upper == ord("U")).any())
    has_t = bool((upper == ord("T")).any())
    return SeqType.rna if has_u and not has_t else SeqType.dna


def alphabet_for(seqtype: SeqType) -> Alphabet:
    """The encoding used for a (resolved) sequence type."""
    return PROTEIN if seqtype is SeqType.protein else NUCLEOTIDE


def encode(names: list[str], raw: list[bytes], alphabet: Alphabet, any_symbol: bool = False) -> list[np.ndarray]:
    """Encode each sequence, or raise `InputError` naming the first bad
    character with its sequence and 1-based position (``any_symbol``: such
    characters are scored as the wildcard, X or N, as MAFFT's --anysymbol)."""
    out = []
    wildcard = alphabet.table[ord("X" if alphabet.name == "protein" else "N")]
    for name, seq in zip(names, raw):
        arr = np.frombuffer(seq, dtype=np.uint8)
        codes = alphabet.table[arr]
        bad = np.flatnonzero(codes == 255)
        if bad.size and any_symbol:
            codes = np.where(codes == 255, wildcard, codes).astype(np.uint8)
        elif bad.size:
            pos = int(bad[0])
            raise InputError(
                f"sequence {name!r}: invalid {alphabet.name} character "
                f"{chr(arr[pos])!r} at position {pos + 1}"
            )
        out.append(codes)
    return out


# Dayhoff groups over "ARNDCQEGHILKMFPSTWYVBZX": AGPST, C, DENQ, HKR, ILMV, FWY
DAYHOFF6 = np.array(
    [0, 3, 2, 2, 1, 2, 2, 0, 3, 4, 4, 3, 4, 5, 0, 0, 0, 5, 5, 4, 2, 2, 0], dtype=np.int64
)


# nucleotides "ATGCSWRYKMBVHDN": A, T, G, C; ambiguity codes count as A
NUC4 = np.array([0, 1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], dtype=np.int64)


def kmer_groups(alphabet: Alphabet) -> np.ndarray:
    """The reduced alphabet k-mers are counted on: each code's group
    (Dayhoff's six for protein, A/C/G/T for nucleotides)."""
    return DAYHOFF6 if alphabet.name == "protein" else NUC4


MOVE_LETTERS = "MID"  # 0 both residues, 1 A residue only, 2 B residue only


#: Characters each alphabet scores as its wildcard though they are not its letters.
STAND_INS = {"protein": b"JUOjuo*", "nucleotide": b"EFIJLOPQXZefijlopqxz"}


def input_warnings(names, raw: list[bytes], alphabet: Alphabet) -> list[str]:
    """What about an input is probably a mistake, as sentences (none when
    nothing is): a single sequence, a sequence with no residue letter, and
    characters scored as the wildcard because the alphabet lacks them, one
    sentence a character, naming the first sequence and position it is in.
    A protein's ``*`` at its end (a stop mark; several count as one) is not
    one of them; a ``*`` inside it is (a stop codon read through, or two
    sequences run together).

    >>> input_warnings(["a", "b"], [b"MKUV*", b"**"], PROTEIN)  # doctest: +NORMALIZE_WHITESPACE
    ["sequence 'b' has no residue letters (only '*')",
     "'U' (1 sequence; first in 'a' at position 3) scored as X: the protein alphabet has no such letter"]
    >>> input_warnings(["a", "b"], [b"MK*V*", b"M*KV"], PROTEIN)  # doctest: +NORMALIZE_WHITESPACE
    ["'*' (2 sequences; first in 'a' at position 3) scored as X: a stop mark inside a sequence (one at its end
     is taken quietly)"]
    """
    out = []
    if len(raw) == 1:
        out.append("one sequence: nothing to align, it is written as it is")
    for name, seq in zip(names, raw):
        if seq and not seq.strip(b"*"):
            out.append(f"sequence {name!r} has no residue letters (only '*')")
    flagged = STAND_INS.get(alphabet.name, b"")
    others = bytes(c for c in range(256) if c not in flagged)
    wildcard = "X" if alphabet.name == "protein" else "N"
    found: dict[str, list] = {}
    for name, seq in zip(names, raw):
        body = seq.rstrip(b"*") if alphabet.name == "protein" else seq  # a protein's closing stop marks: quiet
        first: dict[str, int] = {}  # each flagged letter, either case, and its first position in this sequence
        for ch in set(body.translate(None, others)):  # (the sequence's flagged characters, at C speed)
            letter, pos = chr(ch).upper(), body.index(bytes([ch])) + 1
            first[letter] = min(pos, first.get(letter, pos))
        for letter, pos in first.items():
            found.setdefault(letter, [0, name, pos])[0] += 1
    for letter, (count, name, pos) in sorted(found.items()):
        why = ("a stop mark inside a sequence (one at its end is taken quietly)" if letter == "*" else
               f"the {alphabet.name} alphabet has no such letter")
        out.append(f"{letter!r} ({count} sequence{'s' if count > 1 else ''}; first in {name!r} at position {pos}) "
                   f"scored as {wildcard}: {why}")
    return out
