"""``msagpu-clustalo``: Clustal Omega's command line, ``clustalo -i in.fa
[options]``, mapped onto msagpu, so that a pipeline (nf-core's CLUSTALO_ALIGN,
Galaxy's wrapper) changes one word.

Options take their value as ``--opt=value`` or ``--opt value``. Every option
below is mapped (`MAPPING` says to what); the ones in `UNSUPPORTED` are
refused with the reason, and any other option is an error that names it. As
Clustal Omega, it writes to standard output without ``-o``, refuses to
overwrite an existing file without ``--force``, and is quiet unless ``-v``.

>>> opts = parse(["-i", "in.fa", "--outfmt=clu", "--output-order", "tree-order", "--threads=4", "-o", "out.aln"])
>>> opts.fmt.value, opts.tree_order, opts.config.threads, opts.output
('clustal', True, 4, 'out.aln')
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from msa_gpu.alphabet import SeqType
from msa_gpu.settings.config import AlignerConfig, Mode
from msa_gpu.errors import InputError

#: Clustal Omega's options that msagpu-clustalo maps, and to what.
MAPPING = {
    "-i, --in, --infile FILE": "the input (unaligned or aligned FASTA; '-' for stdin; gaps are removed)",
    "--profile1, --p1 FILE": "an alignment whose columns are kept: merged with --profile2's (rows: profile1's, "
                             "then profile2's), or -i's sequences aligned to it (rows: the sequences', then its) "
                             "(msagpu align --merge)",
    "--profile2, --p2 FILE": "the second alignment of --profile1 (its columns kept too)",
    "--is-profile": "accepted (--profile1 and --profile2 are read as alignments)",
    "-o, --out, --outfile FILE": "the output (default: stdout)",
    "--outfmt FMT": "a2m/fa[sta], clu[stal] (with Clustal's conservation line), msf, phy[lip], st[ockholm], vie[nna]",
    "--infmt fa[sta]/a2m": "accepted (msagpu reads FASTA)",
    "-t, --seqtype T": "Protein, DNA or RNA (default: from the residues)",
    "--dealign": "accepted: msagpu aligns from scratch (an aligned input's gaps are removed, said with -v)",
    "--output-order O": "input-order (default) or tree-order (the guide tree's leaf order)",
    "--wrap N": "N residues a line of FASTA output (default 60)",
    "--guidetree-out FILE": "--tree-out FILE (Newick)",
    "--guidetree-in FILE": "--guidetree-in FILE (Newick, leaves named as the input's sequences)",
    "--distmat-out FILE": "--distmat-out FILE (the guide tree's distances, PHYLIP)",
    "--percent-id": "with --distmat-out: percent identities of the final alignment's rows instead "
                    "(identical residues over the columns both rows fill)",
    "--full, --full-iter": "accepted: msagpu's guide trees come from all pairwise distances up to 20,000 sequences",
    "--iter N": "--maxiterate N (refinement rounds)",
    "--max-guidetree-iterations N": "--retree N",
    "--max-hmm-iterations N": "accepted (msagpu has no HMM iteration)",
    "--auto": "--mode auto (the default)",
    "--threads N": "--threads N",
    "--force": "overwrite an existing output (Clustal Omega refuses without it)",
    "-v, --verbose": "messages on stderr (quiet without it, as Clustal Omega)",
    "--version": "msagpu's version",
}
#: Clustal Omega's options that msagpu-clustalo refuses, with the reason.
UNSUPPORTED = {
    "--hmm-in": "msagpu aligns without a background HMM; drop it",
    "--use-kimura": "msagpu's guide-tree distances are not Kimura-corrected; drop it",
    "--residuenumber": "msagpu's Clustal output has no residue numbers; drop it",
    "--resno": "msagpu's Clustal output has no residue numbers; drop it",
    "--clustering-out": "msagpu does not write mBed's clusters; drop it",
    "--cluster-size": "msagpu's guide trees are not mBed's; drop it",
    "--pileup": "msagpu aligns all sequences together; drop it",
    "-l": "msagpu writes its messages to stderr (with -v); redirect stderr instead",
    "--log": "msagpu writes its messages to stderr (with -v); redirect stderr instead",
    "--MAC-RAM": "msagpu plans its own memory; drop it",
    "--maxnumseq": "msagpu takes any number of sequences; drop it",
    "--maxseqlen": "msagpu takes any sequence length; drop it",
}
_VALUED = {"-i": "input", "--in": "input", "--infile": "input", "-o": "output", "--out": "output",
           "--outfile": "output", "--outfmt": "outfmt", "--infmt": "infmt", "-t": "seqtype", "--seqtype": "seqtype",
           "--output-order": "order", "--wrap": "wrap", "--guidetree-out": "tree_out", "--guidetree-in": "tree_in",
           "--distmat-out": "distmat_out", "--iter": "iter", "--iterations": "iter",
           "--max-guidetree-iterations": "retree", "--max-hmm-iterations": "hmm_iter", "--threads": "threads",
           "--profile1": "profile1", "--p1": "profile1", "--profile2": "profile2", "--p2": "profile2"}
_FLAGS = {"--is-profile", "--dealign", "--percent-id", "--full", "--full-iter", "--auto", "--force", "-v", "--verbose"}
_SEQTYPES = {"protein": SeqType.protein, "dna": SeqType.dna, "rna": SeqType.rna}


@dataclass(frozen=True)
class ClustaloOptions:
    """A parsed Clustal Omega command line."""

    input: str
    output: str | None
    fmt: object  # msa_gpu.io.OutFormat
    config: AlignerConfig
    tree_order: bool = False
    wrap: int = 0
    tree_out: str | None = None
    tree_in: str | None = None
    distmat_out: str | None = None
    percent_id: bool = False
    force: bool = False
    verbose: bool = False
    seqtype: SeqType = SeqType.auto
    extra: dict = field(default_factory=dict)
    profiles: tuple[str, ...] = ()


def _number(option: str, value: str, low: int) -> int:
    try:
        n = int(value)
    except ValueError:
        raise InputError(f"{option} needs a whole number, got {value!r}") from None
    if n < low:
        raise InputError(f"{option} needs a number of at least {low}, got {n}")
    return n


def parse(argv: list[str]) -> ClustaloOptions:
    """Clustal Omega's arguments as `ClustaloOptions`, or `InputError`
    naming the first option msagpu-clustalo does not support."""
    from msa_gpu.io import OutFormat, parse_format

    values: dict[str, str] = {}
    flags: set[str] = set()
    k = 0
    while k < len(argv):
        arg = argv[k]
        name, eq, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name in UNSUPPORTED:
            raise InputError(f"Clustal Omega option {name} is not supported by msagpu-clustalo: {UNSUPPORTED[name]}")
        if name in _VALUED:
            if eq:
                value = inline
            elif k + 1 < len(argv):
                value = argv[k + 1]
                k += 1
            else:
                raise InputError(f"{name} needs a value")
            values[_VALUED[name]] = value
        elif name in _FLAGS and not eq:
            flags.add(name)
        elif name.startswith("-v") and set(name[1:]) == {"v"}:  # -vv, -vvv
            flags.add("-v")
        else:
            raise InputError(f"Clustal Omega option {arg} is not supported by msagpu-clustalo "
                             "(see msagpu-clustalo --help)")
        k += 1
    profiles = tuple(values[p] for p in ("profile1", "profile2") if p in values)
    if "profile2" in values and "profile1" not in values:
        raise InputError("--profile2 needs --profile1 (as Clustal Omega)")
    if len(profiles) == 2 and "input" in values:
        raise InputError("-i with --profile1 and --profile2: Clustal Omega aligns two profiles or sequences to one "
                         "profile, not both")
    if "input" not in values and len(profiles) != 2:
        raise InputError("msagpu-clustalo needs an input: -i FILE (as clustalo), or --profile1 and --profile2")
    if profiles and any(values.get(o) for o in ("tree_out", "tree_in", "distmat_out")):
        raise InputError("--profile1/--profile2 merge alignments: no guide tree or distance matrix is read or "
                         "written (drop --guidetree-in/-out and --distmat-out)")
    if values.get("infmt", "fasta").lower() not in ("fa", "fasta", "a2m", "auto"):
        raise InputError(f"--infmt {values['infmt']}: msagpu-clustalo reads FASTA (fa, fasta, a2m)")
    fmt = parse_format(values.get("outfmt", "fasta"))
    if fmt in (OutFormat.nexus, OutFormat.phylip_strict):
        raise InputError(f"--outfmt {values['outfmt']}: Clustal Omega writes a2m/fa[sta], clu[stal], msf, "
                         "phy[lip], st[ockholm] or vie[nna]")
    seqtype = SeqType.auto
    if "seqtype" in values:
        if values["seqtype"].lower() not in _SEQTYPES and values["seqtype"].lower() != "auto":
            raise InputError(f"--seqtype {values['seqtype']}: Clustal Omega's are Protein, DNA and RNA")
        seqtype = _SEQTYPES.get(values["seqtype"].lower(), SeqType.auto)
    order = values.get("order", "input-order")
    if order not in ("input-order", "tree-order"):
        raise InputError(f"--output-order {order}: input-order or tree-order")
    if "--percent-id" in flags and "distmat_out" not in values:
        raise InputError("--percent-id needs --distmat-out (as in Clustal Omega)")
    threads = _number("--threads", values["threads"], 1) if "threads" in values else None
    settings: dict = {"mode": Mode.auto, "seqtype": seqtype, "threads": threads}
    if "iter" in values:
        settings["maxiterate"] = _number("--iter", values["iter"], 0)
    if "retree" in values:
        settings["retree"] = _number("--max-guidetree-iterations", values["retree"], 0)
    return ClustaloOptions(
        input=values.get("input", ""), output=values.get("output"), fmt=fmt, config=AlignerConfig(**settings),
        tree_order=order == "tree-order", wrap=_number("--wrap", values["wrap"], 1) if "wrap" in values else 0,
        tree_out=values.get("tree_out"), tree_in=values.get("tree_in"), distmat_out=values.get("distmat_out"),
        percent_id="--percent-id" in flags, force="--force" in flags,
        verbose="-v" in flags or "--verbose" in flags, seqtype=seqtype, profiles=profiles)


def job_of(argv: list[str]):
    """Clustal Omega's command line as a `Job`: to standard output without
    ``-o``; every output kept where it exists, unless ``--force``; quiet
    unless ``-v``."""
    from msa_gpu.frontends.job import Inputs, Job, MergeInputs, Outputs, Requests

    opts = parse(argv)
    if opts.profiles:  # profile alignment: the profiles' columns kept
        merge = MergeInputs(opts.profiles, sequences=opts.input or None, sequences_first=True)
        return Job("msagpu-clustalo", Inputs((), opts.seqtype, merge=merge),
                   Requests(opts.config, voice="recipe" if opts.verbose else "quiet"),
                   Outputs(opts.output, opts.fmt, width=opts.wrap, annotate=False, force=opts.force,
                           refusal="Clustal Omega's --force overwrites it"))
    if opts.distmat_out is not None and not opts.percent_id and opts.tree_in is not None:
        raise InputError("--distmat-out: a run along --guidetree-in makes no distance matrix (add --percent-id)")
    return Job("msagpu-clustalo", Inputs((opts.input,), opts.seqtype, guide_tree=opts.tree_in),
               Requests(opts.config, voice="recipe" if opts.verbose else "quiet"),
               Outputs(opts.output, opts.fmt, order="tree" if opts.tree_order else "input", width=opts.wrap,
                       annotate=False, tree=opts.tree_out, distances=opts.distmat_out, percent_id=opts.percent_id,
                       force=opts.force, refusal="Clustal Omega's --force overwrites it"))


def run(argv: list[str]) -> int:
    """Align as ``clustalo`` would; returns the exit code."""
    from msa_gpu.frontends.runner import run as run_job

    return run_job(job_of(argv))


HELP = ("usage: msagpu-clustalo -i FILE [options]   (Clustal Omega's command line)\n\n"
        + "\n".join(f"  {k:<30} {v}" for k, v in MAPPING.items())
        + "\n\nrefused, with the reason:\n"
        + "\n".join(f"  {k:<30} {v}" for k, v in UNSUPPORTED.items()) + "\n")


def main(argv: list[str] | None = None) -> None:
    """Console entry point of ``msagpu-clustalo``."""
    from msa_gpu import __version__

    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(HELP)
        raise SystemExit(0 if argv else 1)
    if argv[0] in ("--version", "--long-version"):
        print(f"msagpu-clustalo {__version__} (msagpu; Clustal Omega's command line)")
        raise SystemExit(0)
    # quiet as Clustal Omega unless -v, which says a warning in one line (no source line); the input's too
    from msa_gpu.frontends.runner import main as run_main, say_warnings

    say_warnings("msagpu-clustalo", quiet="-v" not in argv and "--verbose" not in argv)
    run_main("msagpu-clustalo", job_of, argv)
