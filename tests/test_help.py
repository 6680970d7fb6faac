"""What a new user meets first (issue 44): help that says what the recipe
does, and ``--help``/``--version`` that start without the aligner's heavy
imports (checked on the modules imported, not on wall time)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from msa_gpu.frontends.msagpu import app

#: Modules that ``--help`` and ``--version`` must not import (numpy, numba's
#: compiler, SciPy, Biopython, the aligner).
HEAVY = {"numpy", "numba", "llvmlite", "scipy", "Bio", "msa_gpu.aligner"}
PROTEIN = b">a\nMKTAYIAKQRQISFVKSHFSRQ\n>b\nMKTAYIAKQRISFVKSHFSRQ\n>c\nMKTAIAKQRQISFVKSHFSR\n>d\nMKVAYIAKQRQISFVKSHF\n"
DNA = b">a\nACGTACGTTTGACCAGTACGGATC\n>b\nACGTACGTGACCAGTACGGTC\n>c\nACGTTCGTTTGACAGTACGATC\n>d\nACGAACGTTTGACCAGTTACGGATC\n"
KINDS = {"protein": PROTEIN, "nucleotides": DNA}


def imported(*argv: str, code: str | None = None) -> set[str]:
    """The modules a fresh interpreter imports for ``python -m msa_gpu ARGV``
    (or ``python -c CODE ARGV``), from ``-X importtime``."""
    run = ["-c", code] if code else ["-m", "msa_gpu"]
    proc = subprocess.run([sys.executable, "-X", "importtime", *run, *argv], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    names = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    assert "msa_gpu.frontends.msagpu" in names or code, proc.stderr[-2000:]
    return names


def heavy(names: set[str]) -> set[str]:
    """Of ``names``, the heavy ones (`HEAVY`), each package said once."""
    return {n if n in HEAVY else n.split(".")[0] for n in names if n in HEAVY or n.split(".")[0] in HEAVY}


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["align", "--help"], ["score", "--help"]])
def test_help_and_version_import_no_numpy_numba_scipy_or_biopython(argv):
    assert heavy(imported(*argv)) == set()


def test_msagpu_mafft_help_and_version_import_none_of_them_either():
    code = "from msa_gpu.frontends.mafft import main; main()"
    assert heavy(imported("--help", code=code)) == set()
    assert heavy(imported("--version", code=code)) == set()


def test_the_check_sees_a_heavy_import():
    """(The check can fail: a command that aligns imports them.)"""
    assert {"numpy", "Bio"} <= heavy(imported(code="import msa_gpu.io"))


def test_the_options_take_msagpus_own_enums_from_a_light_module():
    """The help's choices are msagpu's own enums (`msa_gpu.settings.choices`, which
    imports no numpy), the same objects that the config, alphabet and pairwise
    engine use, so a command gets them without conversion."""
    from msa_gpu.settings import choices
    from msa_gpu.alphabet import SeqType
    from msa_gpu.backend.pairwise import PairMode
    from msa_gpu.settings.config import BackendChoice, DistanceMethod, FragmentPlace, Mode, TreeMethod

    assert (SeqType, PairMode, BackendChoice, DistanceMethod, FragmentPlace, Mode, TreeMethod) == (
        choices.SeqType, choices.PairMode, choices.BackendChoice, choices.DistanceMethod, choices.FragmentPlace,
        choices.Mode, choices.TreeMethod)
    text = " ".join(CliRunner().invoke(app, ["align", "--help"], terminal_width=400).output.split())
    for enum_ in (Mode, SeqType, TreeMethod, DistanceMethod, FragmentPlace):
        assert "<" + "|".join(m.value for m in enum_) + ">" in text, enum_.__name__
    assert not heavy(imported(code="import msa_gpu.settings.choices, msa_gpu.settings.config"))


def option_help(name: str, command: str = "align") -> str:
    """The help text of one option of a command, as click holds it (unwrapped)."""
    cmd = typer.main.get_command(app).commands[command]
    (param,) = [p for p in cmd.params if name in p.opts]
    return param.help


def library_claims(text: str) -> dict[str, str]:
    """What a help text says each sequence type's library is: ``the X
    library for protein`` -> {"protein": "X library"}."""
    return {kind: f"{lib} library" for lib, kind in
            re.findall(r"the (\S+(?: \S+)?) library for (protein|nucleotides)", text)}


def round_claims(text: str) -> dict[tuple[str, str | None], int]:
    """What ``--maxiterate``'s help says the default rounds are: ``N in MODE
    mode [for KIND]``, and ``MODE mode never refines`` (0 whatever is asked)."""
    claims = {(mode, kind or None): int(n) for n, mode, kind in
              re.findall(r"(\d+) in (\w+)(?: mode)?(?: for (protein|nucleotides))?", text)}
    claims.update({(mode, "never"): 0 for mode in re.findall(r"(\w+) mode never refines", text)})
    return claims


def recipe_run(tmp_path, kind: str, *options: str) -> tuple[str, str, int, bytes]:
    """One small family of ``kind`` aligned with ``options`` on the CPU: its
    recipe line, the library that line names, its refinement rounds and the
    alignment's bytes."""
    src = tmp_path / f"{kind}.fa"
    src.write_bytes(KINDS[kind])
    r = CliRunner().invoke(app, ["align", str(src), "--backend", "cpu", *options])
    assert r.exit_code == 0, r.output
    (line,) = [l for l in r.stderr.splitlines() if l.startswith("msagpu: recipe: ")]
    library = re.search(r"([\w-]+(?: [\w-]+)?) library", line)
    rounds = re.search(r"refinement up to (\d+) rounds", line)
    return line, library.group(1) + " library" if library else "", int(rounds.group(1)) if rounds else 0, \
        r.stdout_bytes


def test_the_accurate_spellings_help_names_the_library_each_type_gets(tmp_path):
    """--mode accurate, --localpair and --globalpair: each help says which
    library protein and nucleotides get, and a run takes that library; for
    protein the three are one run (the same bytes), as the help says."""
    spellings = {"--mode": ["--mode", "accurate"], "--localpair": ["--localpair"], "--globalpair": ["--globalpair"]}
    outputs = {}
    for option, argv in spellings.items():
        claims = library_claims(option_help(option))
        assert set(claims) == {"protein", "nucleotides"}, (option, option_help(option))
        for kind in KINDS:
            line, library, _, out = recipe_run(tmp_path, kind, *argv)
            assert library == claims[kind], (option, kind, line)
            outputs[option, kind] = out
    assert outputs["--mode", "protein"] == outputs["--localpair", "protein"] == outputs["--globalpair", "protein"]
    # nucleotides too (issue 57: G-INS-i's spelling took a library of global alignments, 0.720 / 0.219 on
    # bralibase3_dev against the posteriors' 0.838 / 0.318)
    assert outputs["--mode", "nucleotides"] == outputs["--localpair", "nucleotides"] == \
        outputs["--globalpair", "nucleotides"]
    assert "same run as --mode accurate" in option_help("--globalpair")
    assert "--mode accurate" in option_help("--localpair") and "the same run" in option_help("--localpair")


def test_maxiterate_help_says_the_rounds_the_recipe_plans(tmp_path):
    """Every default that --maxiterate's help states is what a run plans
    (the posterior libraries, protein's and nucleotides', take none)."""
    claims = round_claims(option_help("--maxiterate"))
    assert {("accurate", "protein"), ("accurate", "nucleotides"), ("fast", None), ("large", "never")} <= set(claims)
    for (mode, kind), rounds in claims.items():
        kinds = [kind] if kind in KINDS else list(KINDS)
        extra = ["--maxiterate", "3"] if kind == "never" else []
        for k in kinds:
            line, _, got, _ = recipe_run(tmp_path, k, "--mode", mode, *extra)
            assert got == rounds, (mode, k, line)


def test_the_claim_parsers_read_the_old_help_as_it_was_wrong():
    """(The checks can fail: the old help's "10 in accurate mode" claims 10
    rounds for protein too, and its *pair help named no library per type.)"""
    assert round_claims("Refinement rounds (default: 10 in accurate mode, 0 in fast)") == {
        ("accurate", None): 10, ("fast", None): 0}
    assert library_claims("Accurate mode with global pairwise alignments") == {}


def test_outfmt_help_names_every_format_and_only_spellings_that_work():
    """--outfmt's help lists every format msagpu writes (vienna was missing),
    and each spelling it names is one --outfmt takes."""
    from msa_gpu.io import OutFormat, parse_format

    text = option_help("--outfmt")
    words = set(re.findall(r"[\w-]+", text))
    assert {f.value for f in OutFormat} <= words, {f.value for f in OutFormat} - words
    aliases = re.search(r"also Clustal Omega's ([\w, -]+?), any case", text).group(1).split(", ")
    assert len(aliases) >= 5 and all(parse_format(a) in OutFormat for a in aliases)


def test_verbose_help_says_what_v_does(refs, tmp_path):
    """-v's help says it is --explain (each family's recipe in batch mode),
    not that it is merely accepted: a batch run says the same with either,
    and more than without."""
    text = option_help("-v")
    assert "spelling of --explain" in text and "accepted" not in text.lower()
    small = tmp_path / "small.fa"
    small.write_bytes(PROTEIN)
    said = {}
    for flag in ("-v", "--explain", None):
        r = CliRunner().invoke(app, ["align", str(refs / "BB11001.tfa"), str(small), "--outdir", str(tmp_path / str(flag)),
                                     "--backend", "cpu", *([flag] if flag else [])])
        assert r.exit_code == 0, r.output
        said[flag] = [x for x in r.stderr.splitlines() if "recipe" in x or x.startswith(("msagpu: BB11001", "msagpu: small"))]
    assert said["-v"] == said["--explain"] and len(said["-v"]) == len(said[None]) + 2
