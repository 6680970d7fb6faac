"""ProbCons' pair-HMM and the posterior probability that two residues are
aligned (issue 29, first step: the model and its exact posteriors on the CPU).

The model is ProbCons 1.12's default protein model with its published
parameters (Do et al., Genome Research 2005; the values of its ``Defaults.h``,
recorded in ``../shared/models.md``): five states, a match state emitting
residue pairs and a short and a long insertion state on either side, each
emitting one residue. A path starts in a state with the initial distribution
and ends in a state with the same distribution (ProbCons' convention).

Posteriors come from forward-backward in probability space, each
anti-diagonal scaled by a power of two (`math.ldexp`: exact), with a fixed
order of additions, so that a GPU twin that avoids fused multiply-adds can give the
same bits. Residues outside the 20 amino acids (B, Z, X) emit pairs with
probability 1e-10 and alone with 1e-5, as in ProbCons.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: ProbCons' 20 x 20 pair emissions (lower triangle, alphabet ARNDCQEGHILKMFPSTWYV).
_PAIRS = """
0.02373072
0.00244502 0.01775118
0.00210228 0.00207782 0.01281864
0.00223549 0.00161657 0.00353540 0.01911178
0.00145515 0.00044701 0.00042479 0.00036798 0.01013470
0.00219102 0.00253532 0.00158223 0.00176784 0.00032102 0.00756604
0.00332218 0.00268865 0.00224738 0.00496800 0.00037956 0.00345128 0.01676565
0.00597898 0.00194865 0.00288882 0.00235249 0.00071206 0.00142432 0.00214860 0.04062876
0.00114353 0.00132105 0.00141205 0.00097077 0.00026421 0.00113901 0.00131767 0.00103704 0.00867996
0.00318853 0.00138145 0.00104273 0.00105355 0.00094040 0.00100883 0.00124207 0.00142520 0.00059716 0.01778263
0.00449576 0.00246811 0.00160275 0.00161966 0.00138494 0.00180553 0.00222063 0.00212853 0.00111754 0.01071834 0.03583921
0.00331693 0.00595650 0.00257310 0.00252518 0.00046951 0.00312308 0.00428420 0.00259311 0.00121376 0.00157852 0.00259626 0.01612228
0.00148878 0.00076734 0.00063401 0.00047808 0.00037421 0.00075546 0.00076105 0.00066504 0.00042237 0.00224097 0.00461939 0.00096120 0.00409522
0.00165004 0.00090768 0.00084658 0.00069041 0.00052274 0.00059248 0.00078814 0.00115204 0.00072545 0.00279948 0.00533369 0.00087222 0.00116111 0.01661038
0.00230618 0.00106268 0.00100282 0.00125381 0.00034766 0.00090111 0.00151550 0.00155601 0.00049078 0.00103767 0.00157310 0.00154836 0.00046718 0.00060701 0.01846071
0.00631752 0.00224540 0.00301397 0.00285226 0.00094867 0.00191155 0.00293898 0.00381962 0.00116422 0.00173565 0.00250962 0.00312633 0.00087787 0.00119036 0.00180037 0.01346609
0.00389995 0.00186053 0.00220144 0.00180488 0.00073798 0.00154526 0.00216760 0.00214841 0.00077747 0.00248968 0.00302273 0.00250862 0.00093371 0.00107595 0.00147982 0.00487295 0.01299436
0.00039119 0.00029139 0.00021006 0.00016015 0.00010666 0.00020592 0.00023815 0.00038786 0.00019097 0.00039549 0.00076736 0.00028448 0.00016253 0.00085751 0.00015674 0.00026525 0.00024961 0.00563625
0.00131840 0.00099430 0.00074960 0.00066005 0.00036626 0.00070192 0.00092548 0.00089301 0.00131038 0.00127857 0.00219713 0.00100817 0.00054105 0.00368739 0.00047608 0.00102648 0.00094759 0.00069226 0.00999315
0.00533241 0.00169359 0.00136609 0.00127915 0.00119152 0.00132844 0.00178697 0.00194579 0.00071553 0.01117956 0.00914460 0.00210897 0.00197461 0.00256159 0.00135781 0.00241601 0.00343452 0.00038538 0.00148001 0.02075171
"""

#: ProbCons' single-residue emissions (background), same alphabet.
_SINGLES = ("0.07831005 0.05246024 0.04433257 0.05130349 0.02189704 0.03585766 0.05615771 0.07783433 "
            "0.02601093 0.06511648 0.09716489 0.05877077 0.02438117 0.04463228 0.03940142 0.05849916 "
            "0.05115306 0.01203523 0.03124726 0.07343426")

#: Emissions of residues outside the 20 (ProbCons' defaults for unknown letters).
UNKNOWN_PAIR, UNKNOWN_SINGLE = 1e-10, 1e-5


@dataclass(frozen=True)
class PairHMM:
    """A five-state pair-HMM: states match, x-insert short, y-insert short,
    x-insert long, y-insert long. ``init`` is the start (and end)
    distribution, ``trans[s, t]`` the transition probabilities, ``pair[a, b]``
    and ``single[a]`` the emissions over an alphabet's codes."""

    init: np.ndarray  # (5,)
    trans: np.ndarray  # (5, 5)
    pair: np.ndarray  # (A, A)
    single: np.ndarray  # (A,)


def probcons_model(alphabet_size: int = 23) -> PairHMM:
    """ProbCons' default protein model over msagpu's protein codes (the first
    20 are ProbCons' alphabet in its order; B, Z and X emit as unknowns)."""
    init = np.array([0.6814756989, 8.615339902e-05, 8.615339902e-05, 0.1591759622, 0.1591759622])
    gap_open = np.array([0.0119511066, 0.0119511066, 0.008008334786, 0.008008334786])
    gap_extend = np.array([0.3965826333, 0.3965826333, 0.8988758326, 0.8988758326])
    trans = _transitions(gap_open, gap_extend)
    low = [np.array(row.split(), float) for row in _PAIRS.strip().splitlines()]
    pair = np.full((alphabet_size, alphabet_size), UNKNOWN_PAIR)
    for a, row in enumerate(low):
        pair[a, :a + 1] = row
        pair[:a + 1, a] = row
    single = np.full(alphabet_size, UNKNOWN_SINGLE)
    single[:20] = np.array(_SINGLES.split(), float)
    return PairHMM(init, trans, pair, single)


def pair_posteriors(x: np.ndarray, y: np.ndarray, model: PairHMM) -> np.ndarray:
    """(len x, len y) float64: the posterior probability that residue i of x
    and residue j of y are aligned, over all paths of ``model``."""
    from msa_gpu.backend import host_posteriors

    return host_posteriors(np.asarray(x, np.int64), np.asarray(y, np.int64), model.init, model.trans, model.pair,
                           model.single)



def perturbed_model(model: PairHMM, rng, sigma: float) -> PairHMM:
    """``model`` with its gap opening and extension probabilities each times
    exp(sigma z), z standard normal (one factor for a state pair's x and y
    states, so the model stays symmetric; MUSCLE 5's ensembles perturb their
    HMM's parameters likewise), the match state's self-transition taking up
    the rest; start probabilities and emissions unchanged.

    >>> m = probcons_model()
    >>> p = perturbed_model(m, np.random.default_rng(1), 0.1)
    >>> bool(np.allclose(p.trans.sum(axis=1), 1.0)) and bool((p.trans != m.trans).any())
    True
    >>> bool(p.trans[0, 1] == p.trans[0, 2] and p.trans[3, 3] == p.trans[4, 4])
    True
    """
    trans = np.array(model.trans, dtype=np.float64)
    f_open, f_extend = np.exp(sigma * rng.standard_normal(2)), np.exp(sigma * rng.standard_normal(2))
    for pair, k in ((0, (1, 2)), (1, (3, 4))):
        for s in k:
            trans[0, s] = trans[0, s] * f_open[pair]
            trans[s, s] = min(trans[s, s] * f_extend[pair], 0.99)
            trans[s, 0] = 1.0 - trans[s, s]
    trans[0, 0] = 1.0 - trans[0, 1:].sum()
    return PairHMM(model.init.copy(), trans, model.pair, model.single)


#: ProbConsRNA 1.1's pair and single emissions over its alphabet ACGUTN (its ``Defaults.h``, trained on
#: BRAliBase II; U and T are one nucleotide), and its initial, gap-open and gap-extend probabilities.
_RNA_LETTERS = "ACGUTN"
_RNA_SINGLES = (0.2270790040, 0.2422080040, 0.2839320004, 0.2464679927, 0.2464679927, 0.0003124650)
_RNA_PAIRS = (
    (0.1487240046, 0.0184142999, 0.0361397006, 0.0238473993, 0.0238473993, 0.0000375308),
    (0.0184142999, 0.1583919972, 0.0275536999, 0.0389291011, 0.0389291011, 0.0000815823),
    (0.0361397006, 0.0275536999, 0.1979320049, 0.0244289003, 0.0244289003, 0.0000824765),
    (0.0238473993, 0.0389291011, 0.0244289003, 0.1557479948, 0.1557479948, 0.0000743985),
    (0.0238473993, 0.0389291011, 0.0244289003, 0.1557479948, 0.1557479948, 0.0000743985),
    (0.0000375308, 0.0000815823, 0.0000824765, 0.0000743985, 0.0000743985, 0.0000263252))
_RNA_INIT = (0.9615409374, 0.0000004538, 0.0000004538, 0.0192291681, 0.0192291681)
_RNA_OPEN = (0.0082473317, 0.0082473317, 0.0107844425, 0.0107844425)
_RNA_EXTEND = (0.3210460842, 0.3210460842, 0.3298229277, 0.3298229277)


def _transitions(gap_open, gap_extend) -> np.ndarray:
    """The five states' transitions from the gap-open and gap-extend
    probabilities of the four insert states (ProbCons' layout)."""
    trans = np.zeros((5, 5))
    trans[0, 0] = 1.0 - sum(gap_open)
    trans[0, 1:] = gap_open
    for k in range(4):
        trans[1 + k, 1 + k] = gap_extend[k]
        trans[1 + k, 0] = 1.0 - gap_extend[k]
    return trans


def probcons_rna_model(letters: str) -> PairHMM:
    """ProbConsRNA 1.1's default model (Do et al.; the nucleotide parameters
    MUSCLE 5 also carries) over msagpu's nucleotide letters: A, C, G and T
    (U is T) as ProbConsRNA's, every ambiguity code (N, R, Y, ...) as its N.

    >>> from msa_gpu.alphabet import NUCLEOTIDE
    >>> m = probcons_rna_model(NUCLEOTIDE.letters)
    >>> a, t = NUCLEOTIDE.letters.index("A"), NUCLEOTIDE.letters.index("T")
    >>> round(float(m.pair[a, a]), 4), round(float(m.pair[t, t]), 4), round(float(m.trans[0, 0]), 4)
    (0.1487, 0.1557, 0.9619)
    """
    index = [_RNA_LETTERS.index(c) if c in "ACGT" else _RNA_LETTERS.index("N") for c in letters]
    pair = np.array([[_RNA_PAIRS[i][j] for j in index] for i in index])
    single = np.array([_RNA_SINGLES[i] for i in index])
    return PairHMM(np.array(_RNA_INIT), _transitions(_RNA_OPEN, _RNA_EXTEND), pair, single)


def model_for(alphabet) -> PairHMM:
    """The published pair-HMM of an alphabet: ProbCons' for protein,
    ProbConsRNA's for nucleotides."""
    return probcons_model(alphabet.size) if alphabet.name == "protein" else probcons_rna_model(alphabet.letters)

