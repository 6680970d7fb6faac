"""``msagpu-mafft``: MAFFT's command line, ``mafft [options] input > output``,
mapped onto msagpu, so that a pipeline changes one word.

Every option below is mapped (`MAPPING` says to what); any other option is an
error that names it, never a silent ignore. Output goes to stdout, in input
order (``--reorder``: guide-tree order), FASTA unless ``--clustalout`` or
``--phylipout`` (strict PHYLIP as MAFFT writes it: `msa_gpu.io.phylip_text`),
nucleotides in lower case and amino acids in upper case as MAFFT writes them,
unless ``--preservecase``.

>>> from msa_gpu.alphabet import SeqType
>>> opts = parse(["--localpair", "--maxiterate", "1000", "--op", "3.06", "in.fa"])
>>> cfg = opts.config_for(SeqType.protein)  # gap costs scale with the input's detected type
>>> cfg.mode.value, cfg.maxiterate, cfg.library_mode.value, round(cfg.gap_open, 2), round(opts.config_for(SeqType.dna).gap_open, 2)
('accurate', 1000, 'auto', 26.0, 16.0)
>>> g = parse(["--globalpair", "in.fa"])
>>> g.config_for(SeqType.protein).library_mode.value, g.config_for(SeqType.dna).library_mode.value
('auto', 'auto')
>>> parse(["--auto", "in.fa"]).config.mode.value, parse(["in.fa"]).config.mode.value
('auto', 'fast')
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field, replace

from msa_gpu.settings.choices import Mode, SeqType  # light, as config is: --help and --version need no numpy
from msa_gpu.settings.config import DEFAULTS, AlignerConfig
from msa_gpu.errors import InputError
from msa_gpu.frontends.mafft_table import _FLAGS, _LARGE, _VALUED, MAPPING, UNSUPPORTED

#: MAFFT's default gap opening (its own units), the scale of --op and --ep, and its default --ep: an offset
#: added to every pair score, 0.0 since MAFFT 7 (0.123 before), so ``--ep 0`` changes nothing.
MAFFT_OP, MAFFT_EP = 1.53, 0.0
MAFFT_KIMURA = 200  #: --kimura N (--jtt N on nucleotides): the PAM that msagpu's fixed scoring stands for

MAFFT_LOP, MAFFT_LEXP = -2.0, -0.1  # MAFFT's defaults of --lop and --lexp (its local pairs' gap costs)


@dataclass(frozen=True)
class MafftOptions:
    """A parsed MAFFT command line."""

    input: str
    config: AlignerConfig
    outfmt: str = "fasta"
    reorder: bool = False
    preserve_case: bool = False
    any_symbol: bool = False
    quiet: bool = False
    tree_out: bool = False
    name_length: int | None = None
    add: str | None = None
    keeplength: bool = False
    op: float | None = None
    ep: float | None = None
    given: dict = field(default_factory=dict)
    seeds: tuple[str, ...] = ()

    def config_for(self, seqtype: SeqType) -> AlignerConfig:
        """The config with --op/--ep scaled for the detected sequence type
        (from msagpu's default for that alphabet); every *pair option takes
        the pair-HMM posteriors as its library, ProbCons' for protein (issue
        29) and ProbConsRNA's for nucleotides (issue 57). As in MAFFT,
        --bl applies to protein only and --kimura to nucleotides only (on
        protein MAFFT reads it as JTT, which msagpu lacks: `InputError`)."""
        kind = "protein" if SeqType(seqtype) is SeqType.protein else "nucleotide"
        _, go, ge, _ = DEFAULTS[kind]
        if kind == "protein" and "--kimura" in self.given:
            pam = self.given["--kimura"]
            raise InputError(f"--kimura {pam}: the input is protein, where MAFFT reads it as JTT PAM {pam}; "
                             "msagpu has no JTT matrix (use --bl N)")
        if kind == "nucleotide" and self.config.matrix is not None:  # MAFFT's --bl is for amino acids only
            warnings.warn(f"--bl {self.given['--bl']}: a protein matrix; nucleotides keep their scoring, as in MAFFT")
        extend = ge + go / MAFFT_OP * (self.ep - MAFFT_EP) / 2 if self.ep is not None else None
        if extend is not None and extend < 0:
            raise InputError(f"--ep {self.ep}: msagpu's gap extension would be negative ({extend:.2f}); "
                             f"the least is --ep {MAFFT_EP - 2 * ge * MAFFT_OP / go:.3f}")
        return replace(self.config, seqtype=seqtype,
                       matrix=self.config.matrix if kind == "protein" else None,
                       gap_open=go * self.op / MAFFT_OP if self.op is not None else None, gap_extend=extend)


def _number(option: str, text: str, kind=float):
    try:
        return kind(text)
    except ValueError:
        raise InputError(f"{option} needs a number, got {text!r}") from None


def parse(argv: list[str]) -> MafftOptions:
    """MAFFT's arguments as `MafftOptions`, or `InputError` naming the first
    option that msagpu-mafft does not support."""
    given: dict[str, str | bool] = {}
    rest: list[str] = []
    seeds: list[str] = []  # --seed FILE, repeatable
    k = 0
    while k < len(argv):
        arg = argv[k]
        if arg.startswith("--") and "=" in arg:  # --op=1.53
            arg, value = arg.split("=", 1)
            argv = argv[:k] + [arg, value] + argv[k + 1:]
        if arg in UNSUPPORTED:
            raise InputError(f"MAFFT option {arg} is not supported by msagpu-mafft: {UNSUPPORTED[arg]}")
        if arg in _VALUED:
            if k + 1 >= len(argv):
                raise InputError(f"{arg} needs a value")
            given[arg] = argv[k + 1]
            seeds += [argv[k + 1]] if arg == "--seed" else []
            k += 2
            continue
        if arg in _FLAGS:
            given[arg] = True
        elif arg.startswith("-") and arg != "-":
            raise InputError(f"MAFFT option {arg} is not supported by msagpu-mafft (see msagpu-mafft --help)")
        else:
            rest.append(arg)
        k += 1
    if len(rest) != 1:
        raise InputError("msagpu-mafft takes one input file (mafft [options] input > output)")
    pair = [o for o in ("--localpair", "--genafpair", "--globalpair") if o in given]
    if len(pair) > 1:
        raise InputError(f"{' and '.join(pair)} exclude each other")
    maxiterate = int(_number("--maxiterate", given["--maxiterate"], int)) if "--maxiterate" in given else None
    if maxiterate is not None and maxiterate < 0:
        raise InputError("--maxiterate must be >= 0")
    large = [o for o in _LARGE if o in given]
    if pair and large:
        raise InputError(f"{pair[0]} and {large[0]} exclude each other")
    # *pair: L-INS-i class; parttree: large; --auto unless --6merpair; else MAFFT's default FFT-NS-2 (-i with --maxiterate)
    mode = (Mode.accurate if pair else Mode.large if large else
            Mode.auto if "--auto" in given and "--6merpair" not in given else Mode.fast)
    if "--amino" in given and "--nuc" in given:
        raise InputError("--amino and --nuc exclude each other")
    seqtype = SeqType.protein if "--amino" in given else SeqType.dna if "--nuc" in given else SeqType.auto
    threads = int(_number("--thread", given["--thread"], int)) if "--thread" in given else None
    retree = int(_number("--retree", given["--retree"], int)) if "--retree" in given else None
    matrix = None
    if "--bl" in given:
        bl = int(_number("--bl", given["--bl"], int))
        if bl not in (45, 50, 62, 80, 90):
            raise InputError(f"--bl {bl}: msagpu has BLOSUM45, 50, 62, 80 and 90")
        matrix = f"BLOSUM{bl}"
    if "--kimura" in given:
        kimura = int(_number("--kimura", given["--kimura"], int))
        if kimura != MAFFT_KIMURA:  # (on protein input config_for refuses it: MAFFT's JTT N)
            raise InputError(f"--kimura {kimura}: msagpu's nucleotide scoring is fixed (NUC.4.4, ProbConsRNA's "
                             f"pair-HMM); it takes only --kimura {MAFFT_KIMURA}, MAFFT's default, for nucleotides")
    # MAFFT's local pairs' gap costs (and --lep, their score offset, once misread as the extension): every
    # accurate run takes the pair-HMM posteriors (issue 57), which have none, so each is checked by MAFFT's
    # sign, said and ignored; the config stays as without it (served requests batch together)
    lop, lexp = (_number(o, given[o]) if o in given else d for o, d in (("--lop", MAFFT_LOP), ("--lexp", MAFFT_LEXP)))
    if not (lop < 0 and lexp <= 0):
        raise InputError("--lop must be negative and --lexp not positive (MAFFT's signs)")
    for option, value in (("--lop", lop), ("--lexp", lexp)):
        if option in given:
            warnings.warn(f"{option} {value}: the pair-HMM library has no gap costs of its own: ignored")
    if "--lep" in given:
        warnings.warn(f"--lep {_number('--lep', given['--lep'])}: MAFFT's score offset of the local pairs has no "
                      "counterpart in msagpu's library: ignored")
    cfg = AlignerConfig(
        seqtype=seqtype, mode=mode, maxiterate=min(maxiterate, 100000) if maxiterate is not None else (0 if pair else None),
        retree=min(max(retree - 1, 0), 10) if retree is not None else 1,
        threads=threads if threads and threads > 0 else None, matrix=matrix,
    )
    name_length = int(_number("--namelength", given["--namelength"], int)) if "--namelength" in given else None
    if name_length is not None and name_length < 1:
        raise InputError("--namelength must be >= 1")
    op = _number("--op", given["--op"]) if "--op" in given else None
    ep = _number("--ep", given["--ep"]) if "--ep" in given else None
    outfmt = "clustal" if "--clustalout" in given else "phylip" if "--phylipout" in given else "fasta"
    add = given.get("--add") or given.get("--addfragments")
    if "--add" in given and "--addfragments" in given:
        raise InputError("--add and --addfragments exclude each other")
    if "--keeplength" in given and not add:
        raise InputError("--keeplength goes with --add or --addfragments")
    merging = [o for o in ("--add", "--addfragments", "--merge", "--seed") if o in given]
    for option in ("--reorder", "--treeout", "--treein", "--adjustdirection", "--adjustdirectionaccurately"):
        if merging and option in given:
            raise InputError(f"{option} does not apply with {merging[0]} (the rows keep their order, no tree is "
                             "written)")
    if len(merging) > 1:
        raise InputError(f"{merging[0]} and {merging[1]} exclude each other")
    return MafftOptions(rest[0], cfg, outfmt, "--reorder" in given, "--preservecase" in given,
                        "--anysymbol" in given, "--quiet" in given, "--treeout" in given, name_length,
                        add, "--keeplength" in given, op, ep, given, tuple(seeds))


def job_of(argv: list[str]):
    """MAFFT's command line as a `Job`: to standard output as MAFFT writes
    (its case, its PHYLIP, names cut to ``--namelength``), ``--treeout``
    to INPUT.tree; ``--add NEW input`` adds to the input alignment;
    ``--merge TABLE input`` and ``--seed ALN input`` merge alignments."""
    from msa_gpu.frontends.job import Inputs, Job, MergeInputs, Outputs, Requests
    from msa_gpu.io import OutFormat

    o = parse(argv)
    adjust = "--adjustdirection" in o.given or "--adjustdirectionaccurately" in o.given
    merge = o.given.get("--merge")
    inputs = (Inputs((o.add,), o.config.seqtype, existing=o.input, any_symbol=o.any_symbol) if o.add else
              Inputs((o.input,), o.config.seqtype, any_symbol=o.any_symbol,
                     merge=MergeInputs(o.seeds, merge, None if merge else o.input, bool(o.seeds)))
              if merge or o.seeds else
              Inputs((o.input,), o.config.seqtype, guide_tree=o.given.get("--treein"), tree_format="mafft",
                     mafft_names=True, any_symbol=o.any_symbol, adjust_direction=adjust))
    return Job("msagpu-mafft", inputs, Requests(o.config, o.config_for, keeplength=o.keeplength,
                                                voice="quiet" if o.quiet else "strategy"),
               Outputs(None, OutFormat(o.outfmt), order="tree" if o.reorder else "input",
                       case="given" if o.preserve_case else "mafft", name_length=o.name_length,
                       mafft_phylip=o.outfmt == "phylip", annotate=False,
                       tree=f"{o.input}.tree" if o.tree_out else None, tree_format="mafft"))


def run(argv: list[str]) -> int:
    """Align as ``mafft`` would and write to stdout; returns the exit code."""
    from msa_gpu.frontends.runner import run as run_job

    return run_job(job_of(argv))


HELP = ("msagpu-mafft: MAFFT's command line on msagpu.\n\nUsage: msagpu-mafft [options] input > output\n\n"
        + "\n".join(f"  {k:<18} {v}" for k, v in MAPPING.items()) + "\n\nNot supported (an error names them):\n"
        + "\n".join(f"  {k:<18} {v}" for k, v in UNSUPPORTED.items()) + "\n")


def main(argv: list[str] | None = None) -> None:
    """Console entry point of ``msagpu-mafft``."""
    from msa_gpu.frontends.runner import main as run_main, say_warnings

    argv = sys.argv[1:] if argv is None else argv
    say_warnings("msagpu-mafft", quiet="--quiet" in argv)
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(HELP)
        raise SystemExit(0 if argv else 1)
    if argv[0] == "--version":
        from msa_gpu import __version__

        print(f"msagpu-mafft {__version__} (MAFFT-compatible front end of msagpu)", file=sys.stderr)
        raise SystemExit(0)
    run_main("msagpu-mafft", job_of, argv)
