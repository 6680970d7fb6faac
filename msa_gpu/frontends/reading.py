"""A job's inputs read as its front door reads them: each family of a batch
(one that fails said, the others read), or one input as MAFFT reads it
(repeated names kept, ``*`` deleted, nucleotides turned where asked)."""

from __future__ import annotations

import warnings

from msa_gpu.errors import InputError
from msa_gpu.frontends.job import Caller, Job, say
from msa_gpu.settings.choices import SeqType


def read_job(job: Job, caller: Caller):
    """The job's families: ``(paths, families, failed)``, the paths read and
    those that failed (batch mode: said, the others aligned); None where
    MAFFT's reading found an empty input (said; nothing to write)."""
    from msa_gpu.io import read_sequences

    inputs, quiet = job.inputs, job.requests.voice == "quiet"
    if inputs.mafft_names:
        seqs = _read_mafft(job, caller)
        return None if seqs is None else ([inputs.paths[0]], [seqs], [])
    families, failed = [], []
    for p in inputs.paths:
        try:
            with warnings.catch_warnings():
                if quiet:
                    warnings.simplefilter("ignore")
                families.append(read_sequences(p, inputs.seqtype, stdin=caller.stdin))
        except InputError as exc:  # batch mode: report it, align the others
            if not inputs.batch:
                raise
            say(caller, job, f"error: {exc}")
            failed.append(p)
    if not families:
        raise InputError("no input could be read")
    return [p for p in inputs.paths if p not in failed], families, failed


def _read_mafft(job: Job, caller: Caller):
    """One input read as MAFFT reads it: repeated names kept, ``*`` deleted
    (unless ``any_symbol``), nucleotides turned where asked; None for an
    empty input (said: MAFFT writes nothing and exits 0)."""
    from msa_gpu.io import make_sequences, parse_fasta, read_text

    inputs, quiet = job.inputs, job.requests.voice == "quiet"
    path = inputs.paths[0]
    text = read_text(path, caller.stdin)
    if not text.strip():  # as MAFFT: an empty input gives an empty output and exit 0
        if not quiet:
            say(caller, job, f"{path}: no sequences; nothing written")
        return None
    names, raw = parse_fasta(text, str(path), unique_names=False)  # MAFFT keeps repeated names
    if len(set(names)) < len(names) and not quiet:
        say(caller, job, "some sequence names are used more than once; kept as they are, as MAFFT does")
    raw = without_stops(names, raw, inputs.any_symbol, None if quiet else lambda line: say(caller, job, line))
    seqs = make_sequences(names, raw, inputs.seqtype, inputs.any_symbol)
    return _adjust_direction(seqs, inputs.any_symbol) if inputs.adjust_direction else seqs


def without_stops(names: list[str], raw: list[bytes], any_symbol: bool = False, say=None) -> list[bytes]:
    """The sequences with every ``*`` deleted, as MAFFT 7.505 deletes them
    (protein and nucleotides alike, silently; ``any_symbol`` keeps them as
    residues), said by ``say(line)`` where given. A sequence of ``*`` alone,
    which MAFFT writes as a row of gaps, is an `InputError` naming it.

    >>> without_stops(["a", "b"], [b"MKV*LAW*", b"MKVLAW"])
    [b'MKVLAW', b'MKVLAW']
    >>> without_stops(["a"], [b"MKV*"], any_symbol=True)
    [b'MKV*']
    """
    if any_symbol or not any(b"*" in r for r in raw):
        return raw
    kept = [r.replace(b"*", b"") for r in raw]
    for name, r in zip(names, kept):
        if not r.strip():
            raise InputError(f"sequence {name!r} has no residues besides '*' (MAFFT deletes '*' and would write it "
                             "as a row of gaps)")
    if say is not None:
        count = sum(b"*" in r for r in raw)
        say(f"'*' deleted from {count} sequence{'s' if count > 1 else ''}, as MAFFT deletes it (--anysymbol keeps it)")
    return kept


def _adjust_direction(seqs, any_symbol: bool):
    """The sequences with those that read better reverse-complemented turned
    and renamed ``_R_<name>`` (MAFFT's --adjustdirection); protein input as is."""
    from msa_gpu.alphabet import encode
    from msa_gpu.distances import orientations, reverse_complement
    from msa_gpu.types import Sequences

    if seqs.seqtype is SeqType.protein:
        return seqs
    turn = orientations(seqs)
    if not turn.any():
        return seqs
    names = tuple(f"_R_{n}" if t else n for n, t in zip(seqs.names, turn))
    raw = tuple(reverse_complement(r) if t else r for r, t in zip(seqs.raw, turn))
    # (encoded again, not re-read: the input's warnings were said once already)
    return Sequences(names, raw, tuple(encode(names, raw, seqs.alphabet, any_symbol)), seqs.seqtype, seqs.alphabet)
