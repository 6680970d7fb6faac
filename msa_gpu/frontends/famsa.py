"""``msagpu-famsa``: FAMSA's command line, ``famsa [options] input output``,
mapped onto msagpu, so that a pipeline (nf-core's FAMSA_ALIGN) changes one word.

Every option below is mapped (`MAPPING` says to what); any other option is an
error that names it. Output is aligned FASTA, to ``output`` or, for
``STDOUT``, to standard output; quiet unless ``-v``.

>>> opts = parse(["-gt", "upgma", "-t", "4", "in.fa", "out.aln"])
>>> opts.config.tree.value, opts.config.threads, opts.output
('upgma', 4, 'out.aln')
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from msa_gpu.settings.config import AlignerConfig, Mode, TreeMethod
from msa_gpu.errors import InputError

#: FAMSA's options that msagpu-famsa maps, and to what.
MAPPING = {
    "-t N": "--threads N (N <= 0: all cores)",
    "-v": "messages on stderr (msagpu-famsa is quiet without it, as FAMSA)",
    "-gt import FILE": "--guidetree-in FILE (Newick, leaves named as the input's sequences)",
    "-gt upgma": "--tree upgma",
    "-gt nj": "--tree nj",
    "-gt sl": "--tree single (single linkage, on msagpu's k-mer distances rather than FAMSA's LCS similarities)",
    "-medoidtree": "--mode large (k-mer pivots and a partition tree: msagpu's tree for very many sequences)",
    "-keep-duplicates": "accepted: msagpu writes every input sequence (repeats are aligned once and copied)",
    "-gz": "the output gzip-compressed",
}
#: FAMSA's options that msagpu-famsa refuses, with the reason.
UNSUPPORTED = {option: "FAMSA's scoring and refinement parameters do not map onto msagpu's; drop it"
               for option in ("-go", "-ge", "-tgo", "-tge", "-gsd", "-gsl", "-dgr", "-dgo", "-dsp", "-r", "-fr")}
UNSUPPORTED["-gt_export"] = "msagpu writes a guide tree beside an alignment: msagpu align --tree-out"
_TREES = {"upgma": TreeMethod.upgma, "nj": TreeMethod.nj, "sl": TreeMethod.single}


@dataclass(frozen=True)
class FamsaOptions:
    """A parsed FAMSA command line."""

    input: str
    output: str
    config: AlignerConfig
    tree_file: str | None = None
    verbose: bool = False
    gzip: bool = False


def parse(argv: list[str]) -> FamsaOptions:
    """FAMSA's arguments as `FamsaOptions`, or `InputError` naming the first
    option msagpu-famsa does not support."""
    rest: list[str] = []
    threads, tree, tree_file, mode = None, TreeMethod.auto, None, Mode.auto
    verbose = compress = False
    k = 0
    while k < len(argv):
        arg = argv[k]
        if arg in UNSUPPORTED:
            raise InputError(f"FAMSA option {arg} is not supported by msagpu-famsa: {UNSUPPORTED[arg]}")
        if arg in ("-t", "-gt"):
            if k + 1 >= len(argv):
                raise InputError(f"{arg} needs a value")
            value = argv[k + 1]
            k += 2
            if arg == "-t":
                try:
                    threads = int(value)
                except ValueError:
                    raise InputError(f"-t needs a number, got {value!r}") from None
            elif value == "import":
                if k >= len(argv):
                    raise InputError("-gt import needs a file")
                tree_file = argv[k]
                k += 1
            elif value in _TREES:
                tree = _TREES[value]
            else:
                raise InputError(f"-gt {value}: msagpu-famsa takes sl, upgma, nj or import FILE")
            continue
        if arg == "-v":
            verbose = True
        elif arg == "-gz":
            compress = True
        elif arg == "-medoidtree":
            mode = Mode.large
        elif arg == "-keep-duplicates":
            pass
        elif arg.startswith("-") and arg != "-":
            raise InputError(f"FAMSA option {arg} is not supported by msagpu-famsa (see msagpu-famsa -help)")
        else:
            rest.append(arg)
        k += 1
    if len(rest) != 2:
        raise InputError("msagpu-famsa takes an input and an output (famsa [options] input output)")
    config = AlignerConfig(tree=tree, mode=mode, threads=threads if threads and threads > 0 else None)
    return FamsaOptions(rest[0], rest[1], config, tree_file, verbose, compress)


def job_of(argv: list[str]):
    """FAMSA's command line as a `Job`: FASTA to ``output`` (``STDOUT``:
    standard output), gzipped with ``-gz``; quiet unless ``-v``."""
    from msa_gpu.frontends.job import Inputs, Job, Outputs, Requests
    from msa_gpu.io import OutFormat

    opts = parse(argv)
    return Job("msagpu-famsa", Inputs((opts.input,), opts.config.seqtype, guide_tree=opts.tree_file),
               Requests(opts.config, voice="recipe" if opts.verbose else "quiet"),
               Outputs(None if opts.output == "STDOUT" else opts.output, OutFormat.fasta, compress=opts.gzip))


def run(argv: list[str]) -> int:
    """Align as ``famsa`` would; returns the exit code."""
    from msa_gpu.frontends.runner import run as run_job

    return run_job(job_of(argv))


HELP = ("usage: msagpu-famsa [options] input output   (FAMSA's command line; output STDOUT for stdout)\n\n"
        + "\n".join(f"  {k:<18} {v}" for k, v in MAPPING.items()) + "\n")


def main(argv: list[str] | None = None) -> None:
    """Console entry point of ``msagpu-famsa``."""
    from msa_gpu.frontends.runner import main as run_main, say_warnings

    argv = sys.argv[1:] if argv is None else argv
    say_warnings("msagpu-famsa", quiet="-v" not in argv)
    if not argv or argv[0] in ("-h", "-help", "--help"):
        sys.stdout.write(HELP)
        raise SystemExit(0 if argv else 1)
    run_main("msagpu-famsa", job_of, argv)
