"""What a front door asks for, as data: a `Job` of `Inputs` (what to read),
`Requests` (how to align and what to say) and `Outputs` (what to write, and
how). Every front door turns its command line into one (`msagpu align`,
``msagpu-mafft``, ``msagpu-famsa``, ``msagpu-clustalo``) and hands it to
`msa_gpu.frontends.runner`, the one place that reads, plans, aligns, orders,
renders and writes. Light: no numpy, so that a parser stays cheap to import.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePath
from typing import Literal

from msa_gpu.settings.choices import SeqType
from msa_gpu.settings.config import AlignerConfig

#: How a run speaks on stderr (`Requests.voice`): ``plans`` says the recipe with the auto mode's rule, the
#: kernels' compilation and the memory plans (``msagpu align``); ``strategy`` names the recipe as MAFFT names
#: its strategy; ``recipe`` says the recipe line alone (FAMSA's and Clustal Omega's ``-v``); ``quiet`` nothing.
Voice = Literal["plans", "strategy", "recipe", "quiet"]


@dataclass(frozen=True)
class MergeInputs:
    """Alignments merged, each one's columns kept (`msa_gpu.workflows.merging`):
    ``alignments`` (files of one alignment each); ``table`` (MAFFT's
    sub-MSA table over the rows of the run's input file, a sub-alignment a
    line, the rows it does not list ungapped and each merged as an alignment
    of one; rows written in the file's order); ``sequences`` (a file of
    unaligned sequences, each merged as an alignment of one; written first
    where ``sequences_first``, as Clustal Omega's ``-i`` with
    ``--profile1``); ``seed``: MAFFT's ``--seed``, the alignments' rows
    named ``_seed_NAME``."""

    alignments: tuple[str, ...] = ()
    table: str | None = None
    sequences: str | None = None
    seed: bool = False
    sequences_first: bool = False


@dataclass(frozen=True)
class Inputs:
    """What a run reads: ``paths`` (one family each; several only in
    ``batch`` mode, where a family that cannot be read is said and the
    others aligned), as ``seqtype``; a guide tree to align along
    (``guide_tree``, Newick or MAFFT's merge list), or, for ``existing``, the
    alignment that the sequences of ``paths[0]`` are added to. MAFFT's
    reading: ``mafft_names`` keeps repeated names and aligns an empty input
    to nothing (exit 0), ``any_symbol`` takes any character (else a ``*`` is
    deleted, and said), ``adjust_direction`` turns nucleotide sequences that
    read better reverse-complemented. ``merge``: alignments merged instead
    (`MergeInputs`; ``paths`` holds MAFFT's table input, if any)."""

    paths: tuple[str, ...]
    seqtype: SeqType = SeqType.auto
    batch: bool = False
    guide_tree: str | None = None
    tree_format: Literal["newick", "mafft"] = "newick"
    existing: str | None = None
    mafft_names: bool = False
    any_symbol: bool = False
    adjust_direction: bool = False
    merge: MergeInputs | None = None


@dataclass(frozen=True)
class EnsembleOptions:
    """``--ensemble N`` and its options (`msa_gpu.frontends.ensemble.check`
    refuses what it does not do)."""

    replicates: int
    perturb: str = "tree,gaps"
    seed: int = 0
    replicate: int | None = None
    ensemble_out: Path | None = None
    min_confidence: float | None = None
    kept_columns: Path | None = None
    residue_scores: Path | None = None


@dataclass(frozen=True)
class Requests:
    """How a run aligns: ``config``, or ``config_for(seqtype)`` made once
    the input is read (MAFFT's gap costs follow the detected type); on the
    GPUs ``gpus`` names (more than one: a worker each) or on Dask workers
    (``dask``); an
    ``ensemble``; ``keeplength`` when adding to an existing alignment. What
    it says on stderr: its ``voice`` (`Voice`), ``explain`` (each family's
    recipe in a batch)."""

    config: AlignerConfig | None = None
    config_for: Callable[[SeqType], AlignerConfig] | None = None
    gpus: str | None = None
    dask: str | None = None
    ensemble: EnsembleOptions | None = None
    keeplength: bool = False
    voice: Voice = "plans"
    explain: bool = False

    def config_of(self, seqtype: SeqType) -> AlignerConfig:
        """The config for input read as ``seqtype`` (`config_for` where given)."""
        return self.config_for(seqtype) if self.config_for is not None else self.config


@dataclass(frozen=True)
class Outputs:
    """What a run writes. The alignment to ``alignment`` (None or '-':
    standard output) or, in batch mode, to ``outdir/<name>.<ext>``, in
    ``fmt``: rows in input order or the guide tree's (``order``); residues
    as given or as MAFFT writes them (``case``: nucleotides lower case,
    amino acids upper case); ``name_length`` cuts names (Clustal, MAFFT's
    PHYLIP); ``mafft_phylip`` writes PHYLIP as MAFFT does; ``width``
    residues a FASTA line (0: 60); ``annotate`` puts the recipe (and, for
    protein, the column confidences) into Stockholm output; ``compress``
    gzips it; without ``force`` an existing file is kept (``refusal``
    says how to replace it). Beside it: the guide tree (``tree``, Newick or MAFFT's
    numbered tree), the distances (``distances``; ``percent_id``: the
    alignment's percent identities instead) and the column confidences
    (``column_scores``)."""

    alignment: str | Path | None = None
    fmt: object = None  # msa_gpu.io.OutFormat (io is heavy: imported by the runner)
    outdir: Path | None = None
    order: Literal["input", "tree"] = "input"
    case: Literal["given", "mafft"] = "given"
    name_length: int | None = None
    mafft_phylip: bool = False
    width: int = 0
    annotate: bool = True
    compress: bool = False
    tree: str | Path | None = None
    tree_format: Literal["newick", "mafft"] = "newick"
    distances: str | Path | None = None
    percent_id: bool = False
    column_scores: str | Path | None = None
    force: bool = True
    refusal: str = ""

    def files(self) -> tuple:
        """Every output file named (the alignment's first), None where not asked."""
        return (self.alignment, self.tree, self.distances, self.column_scores)


@dataclass(frozen=True)
class Job:
    """One front door's call: ``program`` (the name its messages start
    with), what it reads, asks and writes."""

    program: str
    inputs: Inputs
    requests: Requests
    outputs: Outputs = field(default_factory=Outputs)


class Placed(os.PathLike):
    """A relative path as its caller gave it, found in the caller's folder:
    ``str()`` is the text given (every message names it so), ``os.fspath()``
    the file in ``folder`` (every open, stat and rename goes there), so that
    a served request's relative paths need no ``os.chdir``.

    >>> p = Placed("out/x.fa", "/work")
    >>> str(p), os.fspath(p), str(p / "y"), os.fspath(p.beside(".names"))
    ('out/x.fa', '/work/out/x.fa', 'out/x.fa/y', '/work/out/x.fa.names')
    """

    def __init__(self, given: str | os.PathLike, folder: str):
        self.given, self.folder = str(given), folder

    def __fspath__(self) -> str:
        return os.path.join(self.folder, self.given)

    def __str__(self) -> str:
        return self.given

    def __repr__(self) -> str:
        return f"Placed({self.given!r}, {self.folder!r})"

    def __format__(self, spec: str) -> str:
        return format(self.given, spec)

    def __eq__(self, other) -> bool:
        return isinstance(other, Placed) and (self.given, self.folder) == (other.given, other.folder)

    def __hash__(self) -> int:
        return hash((self.given, self.folder))

    def __truediv__(self, name) -> Placed:
        return Placed(PurePath(self.given) / name, self.folder)

    def beside(self, suffix: str) -> Placed:
        """The path with ``suffix`` added to its name (``X.names`` beside ``X``)."""
        return Placed(self.given + suffix, self.folder)


def place(path, folder: str | None):
    """``path`` found in ``folder`` where it is relative (`Placed`); standard
    streams ('-'), absolute paths, None and any path where ``folder`` is None
    (this process's own) as they are."""
    if folder is None:
        return path
    if path is None or isinstance(path, Placed) or str(path) == "-" or os.path.isabs(path):
        return path
    return Placed(path, folder)


#: The fields of a `Job`'s parts that name files.
_PATHS = {"Inputs": ("guide_tree", "existing"), "MergeInputs": ("table", "sequences"),
          "Outputs": ("alignment", "outdir", "tree", "distances", "column_scores"),
          "EnsembleOptions": ("ensemble_out", "kept_columns", "residue_scores")}


def say(caller: Caller, job: Job, line: str) -> None:
    """One line on the caller's stderr, after the program's name (``msagpu: ...``)."""
    print(f"{job.program}: {line}", file=caller.stderr)


def placed(job: Job, folder: str | None) -> Job:
    """``job`` with each relative path it names found in ``folder`` (`Placed`);
    ``job`` itself where ``folder`` is None (the process's own folder)."""
    if folder is None:
        return job

    def part(obj, paths=()):
        if obj is None:
            return None
        changes = {name: place(getattr(obj, name), folder) for name in _PATHS[type(obj).__name__]}
        return replace(obj, **changes, **({"paths": tuple(place(p, folder) for p in paths)} if paths else {}))

    inputs = job.inputs
    inputs = replace(part(inputs, inputs.paths), merge=part(inputs.merge))
    if inputs.merge is not None:
        inputs = replace(inputs, merge=replace(inputs.merge, alignments=tuple(place(p, folder)
                                                                             for p in inputs.merge.alignments)))
    requests = replace(job.requests, ensemble=part(job.requests.ensemble))
    return replace(job, inputs=inputs, requests=requests, outputs=part(job.outputs))


@dataclass(frozen=True)
class Caller:
    """Who a job runs for: its standard streams (``stdin`` binary, ``stdout``
    and ``stderr`` text with a ``buffer``), its folder (``cwd``: relative
    paths are found there, `placed`; None: this process's), its environment
    (``env``: ``MSAGPU_DEBUG``), its umask (new files' permissions; None:
    this process's) and its ``batch`` hook (`msa_gpu.aligner.BatchHook`:
    a server's requests that arrive together aligned in one batch; None:
    alone). `Caller.here` is this process; a served request
    (`msa_gpu.serving.server`) brings its own, handed to the front door's
    ``job_of`` and to the runner, so that no process-wide state is swapped
    for it."""

    stdout: object
    stderr: object
    stdin: object = None
    cwd: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    umask: int | None = None
    batch: object = None

    @classmethod
    def here(cls) -> Caller:
        """This process: its standard streams, folder, environment and umask, as they are now."""
        return cls(sys.stdout, sys.stderr, None, None, os.environ, None)
