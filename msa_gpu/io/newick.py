"""Guide-tree text: Newick with the sequences' names (Bio.Phylo underneath), and MAFFT's
``--treein`` merge list."""

from __future__ import annotations

import numpy as np

from msa_gpu.types import GuideTree


def to_newick(tree: GuideTree, names: list[str]) -> str:
    """The tree in Newick, names quoted where Newick needs it."""

    def label(name: str) -> str:
        if any(c in name for c in " ():;,[]'\t"):
            return "'" + name.replace("'", "''") + "'"
        return name

    n = tree.n_leaves
    text = [label(nm) for nm in names] + [""] * (n - 1)
    for k, (a, b) in enumerate(tree.children):
        la, lb = tree.lengths[k]
        text[n + k] = f"({text[a]}:{la:.6g},{text[b]}:{lb:.6g})"
    return text[2 * n - 2] + ";"


def to_mafft_tree(tree: GuideTree, names: list[str]) -> str:
    """The tree as MAFFT's ``--treeout`` writes ``INPUT.tree``: Newick whose
    leaves are ``N_title`` (input number from 1, the title's spaces and
    Newick's special characters as '_'), each on its own line with its
    branch length on the next, lengths with five decimals.

    >>> from msa_gpu.types import GuideTree
    >>> t = GuideTree(3, np.array([[0, 1], [3, 2]]), np.array([[0.1, 0.1], [0.05, 0.15]]))
    >>> print(to_mafft_tree(t, ["s1 first", "s2", "s3"]))
    ((
    1_s1_first
    :0.10000,
    2_s2
    :0.10000):0.05000,
    3_s3
    :0.15000);
    """
    def label(k: int, name: str) -> str:
        return f"{k + 1}_" + "".join("_" if c.isspace() or c in "():;,[]'" else c for c in name)

    n = tree.n_leaves
    text = [f"\n{label(k, nm)}\n" for k, nm in enumerate(names)] + [""] * (n - 1)
    for k, (a, b) in enumerate(tree.children):
        la, lb = tree.lengths[k]
        text[n + k] = f"({text[a]}:{la:.5f},{text[b]}:{lb:.5f})"
    return text[2 * n - 2] + ";"


def from_newick(text: str, names: list[str]) -> GuideTree:
    """A guide tree from Newick (Biopython's parser), its leaves matched to
    ``names`` (input order). Multifurcations are joined left to right and a
    missing branch length counts as 0.

    >>> t = from_newick("((b:1,c:2):0.5,a:1);", ["a", "b", "c"])
    >>> t.children.tolist(), t.lengths.tolist()
    ([[1, 2], [3, 0]], [[1.0, 2.0], [0.5, 1.0]])
    """
    from io import StringIO

    from Bio import Phylo

    index = {name: i for i, name in enumerate(names)}
    root = Phylo.read(StringIO(text), "newick").root
    n = len(names)
    children: list[tuple[int, int]] = []
    lengths: list[tuple[float, float]] = []
    seen: set[int] = set()

    def visit(clade) -> tuple[int, float]:
        stack = [(clade, False)]
        out: dict[int, tuple[int, float]] = {}
        while stack:
            c, ready = stack.pop()
            if not c.clades:
                if c.name not in index or index[c.name] in seen:
                    raise ValueError(f"tree leaf {c.name!r} is not a sequence name, or is repeated")
                seen.add(index[c.name])
                out[id(c)] = (index[c.name], c.branch_length or 0.0)
            elif not ready:
                stack.append((c, True))
                stack.extend((k, False) for k in reversed(c.clades))
            else:
                node, length = out[id(c.clades[0])]
                for k in c.clades[1:]:
                    other, other_len = out[id(k)]
                    children.append((node, other))
                    lengths.append((length, other_len))
                    node, length = n + len(children) - 1, 0.0
                out[id(c)] = (node, c.branch_length or 0.0)
        return out[id(clade)]

    visit(root)
    if len(seen) != n:
        raise ValueError(f"the tree has {len(seen)} of the {n} sequences")
    return GuideTree(n, np.array(children, dtype=np.int64).reshape(-1, 2), np.array(lengths).reshape(-1, 2))


def from_mafft_tree(text: str, n: int) -> GuideTree:
    """A guide tree in MAFFT's ``--treein`` format: one merge a line, ``i j``
    (the two clusters' smallest 1-based sequence numbers) and optionally their
    two branch lengths; the merged cluster goes on as ``min(i, j)``. A
    malformed line is a ValueError naming it.

    >>> t = from_mafft_tree("1 2 0.1 0.1\\n3 4 0.2 0.2\\n1 3 0.3 0.3\\n", 4)
    >>> t.children.tolist()
    [[0, 1], [2, 3], [4, 5]]
    """
    node = list(range(n))  # the current node of each cluster, by its smallest member
    alive = [True] * n
    children, lengths = [], []
    rows = [line for line in text.splitlines() if line.strip()]
    if len(rows) != n - 1:
        raise ValueError(f"{len(rows)} merges for {n} sequences (MAFFT's format has one a line, n - 1 in all)")
    for k, line in enumerate(rows, 1):
        parts = line.split()
        try:
            i, j = int(parts[0]) - 1, int(parts[1]) - 1
            la, lb = (float(parts[2]), float(parts[3])) if len(parts) >= 4 else (0.0, 0.0)
        except (ValueError, IndexError):
            raise ValueError(f"line {k}: want 'i j [length_i length_j]', got {line.strip()!r}") from None
        if not (0 <= i < n and 0 <= j < n) or i == j or not (alive[i] and alive[j]):
            raise ValueError(f"line {k}: {i + 1} and {j + 1} are not two clusters still to merge")
        lo, hi = min(i, j), max(i, j)
        children.append((node[i], node[j]))
        lengths.append((la, lb))
        node[lo], alive[hi] = n + k - 1, False
    return GuideTree(n, np.array(children, dtype=np.int64).reshape(-1, 2),
                     np.array(lengths, dtype=np.float64).reshape(-1, 2))
