"""The README's "Use" examples run as written (placeholders filled with
bundled files; optional parts in [brackets] dropped, the first of a|b|c
alternatives taken)."""

import gzip
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = str(Path(sys.executable).parent)


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    use = text[text.index("## Use"):]
    block = use[use.index("```sh") + 5: use.index("```", use.index("```sh") + 5)]
    commands = []
    for line in block.splitlines():
        line = line.split("  #")[0].strip()
        if not line:
            continue
        line = re.sub(r"\s*\[[^\]]*\]", "", line)                 # optional parts
        line = re.sub(r"(\w+)(\|\w+)+", r"\1", line)             # a|b|c -> a
        line = line.replace(" ...", "")                           # "fam1.fa fam2.fa ..."
        commands.append(line)
    return commands


@pytest.fixture
def workdir(refs, tmp_path):
    shutil.copy(refs / "BB11001.tfa", tmp_path / "input.fa")
    (tmp_path / "input.fa.gz").write_bytes(gzip.compress((refs / "BB11001.tfa").read_bytes()))
    shutil.copy(refs / "BB11001.tfa", tmp_path / "fam1.fa")
    shutil.copy(refs / "BB12006.tfa", tmp_path / "fam2.fa")
    (tmp_path / "families").mkdir()
    shutil.copy(refs / "BB11001.tfa", tmp_path / "families" / "a.fa")
    shutil.copy(refs / "BB12006.tfa", tmp_path / "families" / "b.fa")
    shutil.copy(refs / "BB11001.ref.fa", tmp_path / "aln.fa")
    (tmp_path / "new.fa").write_bytes(b">new1\nGKGDPKKPRGKMSSYAFFVQTSREEHKKK\n>new2\nKPKRPRSAYNIYVSESFQEAKDDSAQGK\n")
    shutil.copy(refs / "BB11001.ref.fa", tmp_path / "reference.fa")
    shutil.copy(refs / "BB11001.core", tmp_path / "reference.core")
    records = [b">" + r for r in (refs / "BB11001.ref.fa").read_bytes().split(b">")[1:]]  # 4 aligned rows
    (tmp_path / "a.aln").write_bytes(b"".join(records[:2]))  # --merge's alignments (their empty columns are dropped)
    (tmp_path / "b.aln").write_bytes(b"".join(records[2:]))
    (tmp_path / "input").write_bytes(b"".join(records))  # MAFFT's --merge input and its table
    (tmp_path / "subMSAtable").write_text("1 2  # a.aln\n3 4  # b.aln\n")
    return tmp_path


def test_the_readme_lists_commands():
    commands = readme_commands()
    assert len(commands) >= 10 and all(c.startswith(("msagpu ", "msagpu-mafft ", "msagpu-famsa ", "msagpu-clustalo ")) for c in commands), commands


def test_every_readme_example_runs(workdir):
    env = {**os.environ, "PATH": BIN + os.pathsep + os.environ.get("PATH", "")}
    for command in readme_commands():
        r = subprocess.run(["bash", "-c", command], cwd=workdir, env=env, capture_output=True, timeout=300)
        assert r.returncode == 0, (command, r.stderr.decode()[-500:])
    for made in ("out.aln", "out.fa", "out.phy", "guide.nwk", "aligned/fam1.fa", "aligned/a.fa", "pairs.tsv", "clustalo.aln",
                 "distances.phy"):
        assert (workdir / made).stat().st_size > 0, made
