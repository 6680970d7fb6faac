"""The README's figures name their results files, and those files exist."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
README = (ROOT / "README.md").read_text()
#: A results file as the README names it: a dated file under benchmarks/results.
RESULT_FILE = re.compile(r"benchmarks/results/([\w./-]+?\.(?:md|json|txt|png|sha))\b"
                         r"|\b(20\d\d-\d\d-\d\d-[\w.-]+?\.(?:md|json|txt|png|sha))\b")
#: A measured figure: a decimal number, or a number with a unit of time or rate.
FIGURE = re.compile(r"\b\d+\.\d+\b|\b\d[\d,]*\s*(?:s|ms|GCUPS|MB|GB)\b")


def section(text: str, title: str) -> str:
    start = text.index(title)
    end = text.find("\n## ", start + len(title))
    return text[start:] if end < 0 else text[start:end]


def figure_blocks(text: str) -> list[str]:
    """Table rows, bullets and paragraphs that state a figure (code blocks,
    headings and table headers left out)."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    blocks = []
    for para in re.split(r"\n\s*\n", text):
        lines = para.splitlines()
        if lines and lines[0].startswith("|"):
            blocks += [line for line in lines[2:]]  # (a header and its rule first)
        else:
            blocks += re.split(r"\n(?=- )", para)
    # inline code holds literals (parameters, formulas, commands), not measurements
    return [b for b in blocks if FIGURE.search(re.sub(r"`[^`]*`", "", b)) and not b.lstrip().startswith("#")]


def missing_files(text: str) -> list[str]:
    names = {m.group(1) or m.group(2) for m in RESULT_FILE.finditer(text)}
    return sorted(n for n in names if not (RESULTS / n).exists() and not list(RESULTS.rglob(n)))


def unsourced(text: str) -> list[str]:
    return [b for b in figure_blocks(text) if not RESULT_FILE.search(b) and "targets.md" not in b
            and "tests/test_" not in b]


def test_every_results_file_the_readme_names_exists():
    assert RESULT_FILE.search(README)
    assert missing_files(README) == []


def test_every_figure_in_the_readme_names_its_file():
    """Every section, not only "Accuracy and speed": a figure outside inline
    code names its results file (or its test)."""
    assert unsourced(README) == []


def test_the_checks_catch_a_missing_file_and_an_unsourced_figure():
    """(The checks can fail.)"""
    assert missing_files("see `2026-01-01-nowhere-balibase3.md`") == ["2026-01-01-nowhere-balibase3.md"]
    assert missing_files("counts in benchmarks/results/nowhere.json") == ["nowhere.json"]
    text = "## Accuracy and speed\n\nmsagpu aligns it in 1.3 s.\n\n- FAMSA 0.828 (`2026-11-25-h100-tradeoff-balibase3.md`)\n"
    assert unsourced(text) == ["msagpu aligns it in 1.3 s."]
    assert unsourced("## Use\n\nmsagpu aligns it in `--threads 4` mode in 2.5 s.") == \
        ["msagpu aligns it in `--threads 4` mode in 2.5 s."]  # a figure outside the code span counts
    assert unsourced("## Use\n\ngap costs `13/0.8` by default.") == []
