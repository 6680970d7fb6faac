"""``msagpu-mafft``: MAFFT's command line, ``mafft [options] input > output``,
mapped onto msagpu, so that a pipeline changes one word.

Every option below is mapped (`MAPPING` says to what); any other option is an
error that names it, never a silent ignore. Output goes to stdout, in input
order (``--reorder``: guide-tree order), FASTA unless ``--clustalout`` or
``--phylipout`` (strict PHYLIP as MAFFT writes it: `phylip_text`),
nucleotides in lower case and amino acids in upper case as MAFFT writes them,
unless ``--preservecase``.

>>> from msa_gpu.alphabet import SeqType
>>> opts = parse(["--localpair", "--maxiterate", "1000", "--op", "3.06", "in.fa"])
>>> cfg = opts.config_for(SeqType.protein)  # gap costs scale with the input's detected type
>>> cfg.mode.value, cfg.maxiterate, cfg.library_mode, round(cfg.gap_open, 2), round(opts.config_for(SeqType.dna).gap_open, 2)
('accurate', 1000, 'auto', 26.0, 16.0)
>>> g = parse(["--globalpair", "in.fa"])
>>> g.config_for(SeqType.protein).library_mode, g.config_for(SeqType.dna).library_mode
('auto', 'auto')
>>> parse(["--auto", "in.fa"]).config.mode.value, parse(["in.fa"]).config.mode.value
('auto', 'fast')
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field, replace

from msa_gpu.choices import Mode, SeqType  # light, as config is: --help and --version need no numpy
from msa_gpu.config import DEFAULTS, AlignerConfig
from msa_gpu.errors import InputError

#: MAFFT's default gap opening (its own units), the scale of --op and --ep, and its default --ep: an offset
#: added to every pair score, 0.0 since MAFFT 7 (0.123 before), so ``--ep 0`` changes nothing.
MAFFT_OP, MAFFT_EP = 1.53, 0.0
#: MAFFT's --kimura N (and its twin --jtt N on nucleotides): the one PAM distance msagpu's fixed nucleotide
#: scoring stands for, MAFFT's default.
MAFFT_KIMURA = 200

#: What each MAFFT option becomes (the table in the README).
MAPPING = {
    "--auto": "--mode auto (accurate up to 200 sequences, large from 20,000, else fast)",
    "--localpair": "--mode accurate (L-INS-i): the pair-HMM posterior library for protein (ProbCons' model), "
                   "the pair-HMM posterior library for nucleotides (ProbConsRNA's); no refinement unless "
                   "--maxiterate N (as MAFFT)",
    "--genafpair": "the same as --localpair (msagpu has no generalised affine pairs)",
    "--globalpair": "--mode accurate (G-INS-i): the pair-HMM posterior library for protein (ProbCons' model), the "
                    "pair-HMM posterior library for nucleotides (ProbConsRNA's), the same run as --localpair; no "
                    "refinement unless --maxiterate N (as MAFFT)",
    "--maxiterate N": "--maxiterate N (refinement rounds; without a *pair option: fast mode + refinement, FFT-NS-i)",
    "--retree N": "--retree N-1 (MAFFT counts the first tree; FFT-NS-2 is --retree 2 there, 1 here)",
    "--op X": "--gap-open 13 X / 1.53 (protein; 8 X / 1.53 nucleotides): proportional to MAFFT's default",
    "--ep X": "MAFFT's offset (default 0, which changes nothing): --gap-extend 0.8 + 13 X / 1.53 / 2 (protein; "
              "6.0 + 8 X / 1.53 / 2 nucleotides), half an offset a gapped residue on --op's scale",
    "--kimura N": "accepted for N = 200, MAFFT's default (msagpu's nucleotide scoring is fixed: NUC.4.4 and "
                  "ProbConsRNA's pair-HMM); any other N, or protein input (where MAFFT reads it as JTT N), an error",
    "--thread N": "--threads N (N <= 0: all cores)",
    "--reorder": "rows in guide-tree order",
    "--inputorder": "rows in input order (the default)",
    "--clustalout": "--outfmt clustal",
    "--phylipout": "strict PHYLIP, as MAFFT writes it: each name's first word cut or padded to 10 characters "
                   "(names that the cut makes equal are kept distinct by a numbered tail: seq_longn1)",
    "--namelength N": "names cut to N characters in Clustal output, and cut or padded to N in PHYLIP output",
    "--preservecase": "residues as given (else DNA/RNA lower case, protein upper case)",
    "--anysymbol": "any character accepted, scored as the wildcard (X or N), '*' kept (without it '*' is deleted, "
                   "as MAFFT deletes it, with a note on stderr)",
    "--quiet": "--quiet",
    "--treeout": "guide tree to INPUT.tree as MAFFT writes it (Newick, leaves N_title)",
    "--treein FILE": "align along this guide tree, in MAFFT's format (a merge 'i j [length length]' a line, "
                     "sequences numbered from 1 in input order)",
    "--amino": "--seqtype protein",
    "--nuc": "--seqtype dna",
    "--add FILE": "add FILE's sequences to the input alignment, whose columns never change (msagpu align --add)",
    "--addfragments FILE": "the same as --add (each fragment is aligned to the whole alignment)",
    "--keeplength": "with --add: insertions dropped, the alignment keeps its width",
    "--6merpair": "--mode fast (6-mer distances, as msagpu's default tree)",
    "--parttree": "--mode large (k-mer pivots and a partition tree, MAFFT's PartTree idea)",
    "--dpparttree": "--mode large",
    "--fastaparttree": "--mode large",
    "--large": "--mode large (no N x N matrix)",
    "--memsave": "accepted (long merges always run in msagpu's checkpointed kernel, memory ~ (m + n)^1.5)",
    "--bl N": "--matrix BLOSUMN (45, 50, 62, 80 or 90) for protein; nucleotides keep their scoring, as in MAFFT "
              "(a note on stderr)",
    "--lop X": "accepted (negative, as MAFFT's), with a note on stderr: the pair-HMM library has no gap costs of its "
               "own, so it changes nothing",
    "--lexp X": "accepted (not positive, as MAFFT's), with a note on stderr: the pair-HMM library has no gap costs "
                "of its own, so it changes nothing",
    "--lep X": "accepted, with a note on stderr: MAFFT's score offset of the local pairs; msagpu's library has "
               "no offset, so it changes nothing",
    "--adjustdirection": "nucleotide sequences whose reverse complement shares more 6-mers with the first sequence "
                         "are turned and named _R_<name>, as MAFFT names them",
    "--adjustdirectionaccurately": "the same as --adjustdirection (msagpu compares k-mers, not alignments)",
}
#: Options MAFFT has that msagpu-mafft refuses, with the reason.
UNSUPPORTED = {
    "--addfull": "use --add (msagpu aligns every added sequence to the whole alignment)",
    "--addlong": "use --add (msagpu aligns every added sequence to the whole alignment)",
    "--merge": "merging subalignments is not built yet",
    "--seed": "seed alignments are not built yet",
    "--leavegappyregion": "msagpu aligns every region; gappy regions are not left unaligned",
    "--unalignlevel": "msagpu has no unaligned-region model (MAFFT's --unalignlevel); drop the option",
    "--jtt": "msagpu has no JTT matrix covering B, Z and X (Biopython's JONES lacks them); use --bl N "
             "(nucleotides: MAFFT reads --jtt N as --kimura N; drop it, or give --kimura 200)",
    "--tm": "msagpu has no transmembrane matrix; use --bl N (nucleotides: MAFFT ignores it; drop it)",
    "--aamatrix": "msagpu reads no matrix files; use --bl N (nucleotides: MAFFT ignores it; drop it)",
}
_VALUED = {"--maxiterate", "--retree", "--op", "--ep", "--thread", "--namelength", "--add", "--addfragments",
           "--bl", "--lop", "--lep", "--lexp", "--treein", "--kimura"}
_FLAGS = {"--auto", "--localpair", "--genafpair", "--globalpair", "--reorder", "--inputorder", "--clustalout",
          "--phylipout", "--preservecase", "--anysymbol", "--quiet", "--treeout", "--amino", "--nuc", "--keeplength",
          "--6merpair", "--parttree", "--dpparttree", "--fastaparttree", "--large", "--memsave", "--adjustdirection",
          "--adjustdirectionaccurately"}
_LARGE = ("--parttree", "--dpparttree", "--fastaparttree", "--large")
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
    if pair:
        mode = Mode.accurate
    elif large:
        mode = Mode.large
    elif "--6merpair" in given:
        mode = Mode.fast
    elif "--auto" in given:
        mode = Mode.auto
    else:  # MAFFT's default: FFT-NS-2 (FFT-NS-i with --maxiterate)
        mode = Mode.fast
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
    for option in ("--reorder", "--treeout", "--treein"):
        if add and option in given:
            raise InputError(f"{option} does not apply with --add (the existing rows keep their order, no tree is made)")
    return MafftOptions(rest[0], cfg, outfmt, "--reorder" in given, "--preservecase" in given,
                        "--anysymbol" in given, "--quiet" in given, "--treeout" in given, name_length,
                        add, "--keeplength" in given, op, ep, given)


def _without_stops(names: list[str], raw: list[bytes], opts: MafftOptions) -> list[bytes]:
    """The sequences with every ``*`` deleted, as MAFFT 7.505 deletes them
    (protein and nucleotides alike, silently; ``--anysymbol`` keeps them as
    residues), said on stderr unless ``--quiet``. A sequence of ``*`` alone,
    which MAFFT writes as a row of gaps, is an `InputError` naming it.

    >>> o = parse(["--quiet", "in.fa"])
    >>> _without_stops(["a", "b"], [b"MKV*LAW*", b"MKVLAW"], o)
    [b'MKVLAW', b'MKVLAW']
    >>> _without_stops(["a"], [b"MKV*"], parse(["--quiet", "--anysymbol", "in.fa"]))
    [b'MKV*']
    """
    if opts.any_symbol or not any(b"*" in r for r in raw):
        return raw
    kept = [r.replace(b"*", b"") for r in raw]
    for name, r in zip(names, kept):
        if not r.strip():
            raise InputError(f"sequence {name!r} has no residues besides '*' (MAFFT deletes '*' and would write it "
                             "as a row of gaps)")
    if not opts.quiet:
        count = sum(b"*" in r for r in raw)
        print(f"msagpu-mafft: '*' deleted from {count} sequence{'s' if count > 1 else ''}, as MAFFT deletes it "
              "(--anysymbol keeps it)", file=sys.stderr)
    return kept


def run(argv: list[str]) -> int:
    """Align as ``mafft`` would and write to stdout; returns the exit code."""
    import numpy as np

    from msa_gpu.aligner import Aligner
    from msa_gpu.io import check_outputs, make_sequences, parse_fasta, read_guide_tree, read_text, to_mafft_tree, write_output
    from msa_gpu.tree import leaf_order

    opts = parse(argv)
    if opts.add:
        return _run_add(opts)
    tree_file = f"{opts.input}.tree" if opts.tree_out else None  # MAFFT's --treeout: INPUT.tree
    check_outputs(tree_file)  # before the work, not after it
    text = read_text(opts.input)
    if not text.strip():  # as MAFFT: an empty input gives an empty output and exit 0
        if not opts.quiet:
            print(f"msagpu-mafft: {opts.input}: no sequences; nothing written", file=sys.stderr)
        return 0
    names, raw = parse_fasta(text, str(opts.input), unique_names=False)  # MAFFT keeps repeated names
    if len(set(names)) < len(names) and not opts.quiet:
        print("msagpu-mafft: some sequence names are used more than once; kept as they are, as MAFFT does",
              file=sys.stderr)
    raw = _without_stops(names, raw, opts)
    seqs = make_sequences(names, raw, opts.config.seqtype, opts.any_symbol)
    if "--adjustdirection" in opts.given or "--adjustdirectionaccurately" in opts.given:
        seqs = _adjust_direction(seqs, opts)
    config = opts.config_for(seqs.seqtype)
    tree = read_guide_tree(opts.given["--treein"], list(seqs.names), "mafft") if "--treein" in opts.given else None
    from msa_gpu.progress import StageReporter
    from msa_gpu.recipe import describe

    aligner = Aligner(config, reporter=None if opts.quiet else StageReporter(min_seconds=0.05))
    recipe = aligner.plan([seqs], [tree])[0]
    if not opts.quiet:  # as MAFFT names its strategy
        print(f"msagpu-mafft: {describe(recipe, aligner.backend_said([recipe]))}", file=sys.stderr)
    result = aligner.align(seqs, guide_tree=tree, recipe=recipe)
    order = leaf_order(result.guide_tree)[0] if opts.reorder else np.arange(len(seqs))
    rows = result.rows()
    _emit(opts, [seqs.names[i] for i in order], [rows[i] for i in order], seqs.seqtype)
    if tree_file is not None:  # MAFFT's INPUT.tree: numbered leaves, one a line
        newick = to_mafft_tree(result.guide_tree, list(seqs.names))
        write_output(tree_file, lambda h: h.write(newick + "\n"))
    return 0


def _adjust_direction(seqs, opts: MafftOptions):
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
    return Sequences(names, raw, tuple(encode(names, raw, seqs.alphabet, opts.any_symbol)), seqs.seqtype,
                     seqs.alphabet)


def _run_add(opts: MafftOptions) -> int:
    """``--add NEW input``: NEW added to the input alignment."""
    from msa_gpu.io import read_aligned, read_new
    from msa_gpu.progressive import add_sequences

    names, rows = read_aligned(opts.input)
    new = read_new(opts.add, rows, opts.config.seqtype, opts.any_symbol)
    out_names, out_rows = add_sequences(names, rows, new, opts.config_for(new.seqtype), keeplength=opts.keeplength,
                                        any_symbol=opts.any_symbol)
    _emit(opts, out_names, out_rows, new.seqtype)
    return 0


def _emit(opts: MafftOptions, names: list[str], rows: list[bytes], seqtype: SeqType) -> None:
    """The alignment to stdout as MAFFT writes it: nucleotides in lower case,
    amino acids in upper case (unless --preservecase); names cut to
    --namelength in Clustal and PHYLIP output."""
    from msa_gpu.io import OutFormat, render_alignment, stream_fasta, write_text

    if not opts.preserve_case:
        rows = [r.lower() if seqtype is not SeqType.protein else r.upper() for r in rows]
    if opts.outfmt == "fasta":
        write_text(None, lambda h: stream_fasta(h, names, rows))
        return
    if opts.outfmt == "phylip":
        text = phylip_text(names, rows, opts.name_length or PHYLIP_NAME_WIDTH)
        write_text(None, lambda h: h.write(text))
        return
    if opts.name_length:
        names = [n.split(None, 1)[0][: opts.name_length] if n.strip() else n for n in names]
    text = render_alignment(names, rows, OutFormat(opts.outfmt), seqtype)
    write_text(None, lambda h: h.write(text))


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
    from msa_gpu.io import strict_names

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


HELP = "msagpu-mafft: MAFFT's command line on msagpu.\n\nUsage: msagpu-mafft [options] input > output\n\n" + \
    "\n".join(f"  {k:<18} {v}" for k, v in MAPPING.items()) + "\n\nNot supported (an error names them):\n" + \
    "\n".join(f"  {k:<18} {v}" for k, v in UNSUPPORTED.items()) + "\n"


def main(argv: list[str] | None = None) -> None:
    """Console entry point of ``msagpu-mafft``."""
    import warnings

    from msa_gpu.errors import exit_with

    argv = sys.argv[1:] if argv is None else argv
    warnings.showwarning = (lambda *a, **k: None) if "--quiet" in argv else \
        (lambda message, *a, **k: print(f"msagpu-mafft: {message}", file=sys.stderr))
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(HELP)
        raise SystemExit(0 if argv else 1)
    if argv[0] == "--version":
        from msa_gpu import __version__

        print(f"msagpu-mafft {__version__} (MAFFT-compatible front end of msagpu)", file=sys.stderr)
        raise SystemExit(0)
    exit_with("msagpu-mafft", run, argv)
