"""MRLE (benchmarks/mrle_codec): the paper's worked example, exact round trips,
the numba twin against a plain-Python encoder, range errors, and the CUDA
kernels against the twin (GPU only)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msa_gpu.backend import probe_gpu
from benchmarks.mrle_codec import INT32_MAX, INT32_MIN, MRLEMatrix, compare, decode, encode, packed4_bytes

# Zhu et al., matrix (6) and its vectors (7) and (8); localstop = 21
PAPER_M = [
    [21, 21, 21, 21, 21, 21, 21, 21, 21, 21],
    [21, 21, 0, 21, 21, 0, 21, 21, 0, 21],
    [21, 0, 21, 21, 0, 21, 0, 0, 21, 21],
    [0, 21, 21, 21, 21, 21, 0, -2, -3, 0],
    [21, 0, 0, 0, 21, 0, 0, 2, 0, -2],
    [0, 0, 0, 21, 0, 21, 21, 0, 3, 2],
    [0, 0, 21, 0, 0, 21, 21, 21, 21, 0],
    [0, 0, 0, 0, 0, 21, 0, 21, 21, 21],
    [21, 0, 0, 0, 21, 0, 0, 21, 21, 21],
    [21, 0, 0, 0, 0, 21, 0, 0, 0, 21],
]
PAPER_AR = [0, 2, 12, 22, 29, 38, 47, 55, 61, 69, 76]
PAPER_AV = [
    21, 52,
    21, 44, 0, 21, 44, 0, 21, 44, 0, 21,
    21, 0, 21, 44, 0, 21, 0, 44, 21, 44,
    0, 21, 47, 0, -2, 44, 0,
    21, 0, 45, 21, 0, 44, 2, 0, -2,
    0, 45, 21, 0, 21, 44, 0, 3, 44,
    0, 44, 21, 0, 44, 21, 46, 0,
    0, 47, 21, 0, 21, 45,
    21, 0, 45, 21, 0, 44, 21, 45,
    21, 0, 46, 21, 0, 45, 21,
]


def reference_encode(M, ls):
    """The rules of benchmarks/mrle_codec, one cell at a time in plain Python."""
    ar, av = [0], []
    for row in np.asarray(M, dtype=np.int64).tolist():
        j = 0
        while j < len(row):
            v, k = row[j], 1
            step = 0 if v in (0, ls) else 1
            while j + k < len(row) and row[j + k] == v - step * k:
                k += 1
            av += [v] if k == 1 else [v, k + 2 * ls]
            j += k
        ar.append(len(av))
    return ar, av


def test_paper_example():
    m = encode(PAPER_M, 21)
    assert m.Ar.dtype == np.int64 and m.Av.dtype == np.int32
    assert m.Ar.tolist() == PAPER_AR
    assert m.Av.tolist() == PAPER_AV
    assert decode(m).tolist() == PAPER_M
    assert MRLEMatrix((10, 10), 21, PAPER_AR, PAPER_AV).Av.tolist() == PAPER_AV
    assert compare(PAPER_M, 21)["mrle_bytes"] == 76 * 4 + 11 * 8


def random_rows(draw_ints, rng, m, n, ls):
    """Rows of zero runs, localstop runs, falling runs, repeats and noise."""
    out = np.empty((m, n), np.int64)
    for i in range(m):
        row = []
        while len(row) < n:
            kind, k = rng.integers(0, 5), int(rng.integers(1, 2 * n + 2))
            if kind == 0:
                row += [0] * k
            elif kind == 1:
                row += [ls] * k
            elif kind == 2:
                v = int(rng.integers(-3 * n, 2 * ls + 1))
                row += list(range(v, v - k, -1))
            elif kind == 3:
                row += [int(rng.integers(-n, 2 * ls + 1))] * k
            else:
                row += draw_ints(k).tolist()
        out[i] = row[:n]
    return out


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(1, 9), n=st.integers(1, 70), ls=st.integers(0, 40))
def test_round_trip_random(seed, m, n, ls):
    rng = np.random.default_rng(seed)
    M = random_rows(lambda k: rng.integers(-n, 2 * ls + 1, k), rng, m, n, ls)
    enc = encode(M, ls)
    ar, av = reference_encode(M, ls)
    assert enc.Ar.tolist() == ar and enc.Av.tolist() == av
    assert np.array_equal(decode(enc), M)
    assert enc.Av.shape[0] <= 2 * M.size and (enc.Av[enc.Ar[:-1]] <= 2 * ls).all()
    again = encode(decode(enc), ls)
    assert np.array_equal(again.Ar, enc.Ar) and np.array_equal(again.Av, enc.Av)


@given(n=st.integers(1, 40), ls=st.integers(0, 30), value=st.sampled_from(["zero", "ls"]))
def test_constant_rows(n, ls, value):
    M = np.full((3, n), 0 if value == "zero" else ls, np.int32)
    enc = encode(M, ls)
    want = [M[0, 0]] if n == 1 else [M[0, 0], n + 2 * ls]
    assert enc.Av.tolist() == want * 3
    assert enc.Ar.tolist() == [0, len(want), 2 * len(want), 3 * len(want)]
    assert np.array_equal(decode(enc), M)


@pytest.mark.parametrize("M, ls", [
    ([[5]], 3), ([[0], [0], [7], [6]], 4), ([[3, 2, 1, 0, -1, -2]], 2), ([[1, 0, 0, 0]], 1),
    ([[0, -1, -2, 0, 0]], 0), ([[INT32_MIN + 1, INT32_MIN, INT32_MIN]], 0),
    ([[2 * 1000, 1999, 1000, 1000]], 1000), (np.zeros((0, 4), np.int32), 3), (np.zeros((3, 0), np.int32), 3),
    ([[True, False], [True, True]], 1), (np.array([[9, 8, 7]], np.uint16), 5),
    ([[(INT32_MAX - 3) // 2 * 2] * 3], (INT32_MAX - 3) // 2),
])
def test_edge_cases(M, ls):
    M = np.asarray(M)
    enc = encode(M, ls)
    ar, av = reference_encode(M, ls)
    assert enc.Ar.tolist() == ar and enc.Av.tolist() == av
    assert np.array_equal(decode(enc), M.astype(np.int64)) and decode(enc).shape == M.shape


@pytest.mark.parametrize("M, ls, what", [
    ([[0, 9]], 4, "outside"), ([[INT32_MIN - 1]], 4, "outside"), ([[1]], -1, ">= 0"),
    ([[1.0]], 4, "integer"), ([1, 2], 4, "2-D"), ([[0]], 2**30, "int32"), ([[0]], 1.5, "integer"),
])
def test_out_of_range(M, ls, what):
    with pytest.raises(ValueError, match=what):
        encode(np.asarray(M), ls)


@pytest.mark.parametrize("Ar, Av", [
    ([0, 2], [44, 0]),          # a count first
    ([0, 3], [0, 44, 44]),      # two counts in a row
    ([0, 2], [0, 45]),          # three cells, not two
    ([0, 1], [0, 0]),           # Ar does not end at len(Av)
    ([0, 3, 2], [0, 0, 0]),     # Ar falls
])
def test_bad_vectors(Ar, Av):
    shape = (len(Ar) - 1, 2)
    with pytest.raises(ValueError):
        MRLEMatrix(shape, 21, np.asarray(Ar), np.asarray(Av))


def test_falling_run_below_int32_rejected():
    with pytest.raises(ValueError, match="below int32"):
        MRLEMatrix((1, 3), 0, [0, 2], [INT32_MIN + 1, 3])


def test_parallel_loops_match_serial():
    from benchmarks.mrle_codec import cpu as twin

    rng = np.random.default_rng(5)
    M = random_rows(lambda k: rng.integers(-300, 43, k), rng, 50, 300, 21).astype(np.int32)
    n1, n2 = np.empty(50, np.int64), np.empty(50, np.int64)
    twin._lengths_seq(M, 21, n1)
    twin._lengths_par(M, 21, n2)
    Ar = np.concatenate([[0], np.cumsum(n1)])
    a1, a2 = np.empty(Ar[-1], np.int32), np.empty(Ar[-1], np.int32)
    twin._write_seq(M, 21, Ar, a1)
    twin._write_par(M, 21, Ar, a2)
    d1, d2 = np.empty_like(M), np.empty_like(M)
    twin._decode_seq(Ar, a1, 21, d1)
    twin._decode_par(Ar, a1, 21, d2)
    assert np.array_equal(n1, n2) and np.array_equal(a1, a2)
    assert np.array_equal(d1, M) and np.array_equal(d2, M)


def test_compare_and_packed4():
    M = np.zeros((100, 51), np.int32)
    c = compare(M, 0)
    assert c["raw_int32_bytes"] == 100 * 51 * 4 and c["packed4_bytes"] == packed4_bytes(M.shape) == 2550
    assert c["mrle_entries"] == 200 and c["mrle_bytes"] == 200 * 4 + 101 * 8
    assert c["mrle_over_raw"] == c["mrle_bytes"] / c["raw_int32_bytes"]


def _gpu():
    ok, reason = probe_gpu()
    if not ok:
        pytest.fail(f"GPU required: {reason}")
    import cupy

    return cupy


@pytest.mark.gpu
@pytest.mark.parametrize("seed", range(4))
def test_gpu_kernels_match_cpu_twin(seed):
    cp = _gpu()
    rng = np.random.default_rng(seed)
    shapes = [(1, 1), (1, 33), (7, 1), (0, 5), (5, 0), (64, 31), (33, 32), (40, 65), (9, 700), (3, 2049)]
    for m, n in shapes:
        ls = int(rng.integers(0, 60)) if seed % 2 else m + n + 1
        M = random_rows(lambda k: rng.integers(-n, 2 * ls + 1, k), rng, m, n, ls).astype(np.int32)
        want = encode(M, ls)
        got = encode(cp.asarray(M), ls, xp=cp)
        assert np.array_equal(want.Ar, got.Ar.get()), (m, n)
        assert np.array_equal(want.Av, got.Av.get()), (m, n)
        assert np.array_equal(decode(got, xp=cp).get(), M), (m, n)
        assert np.array_equal(decode(want, xp=cp).get(), M), (m, n)
        assert np.array_equal(decode(got), M), (m, n)
