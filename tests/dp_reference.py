"""An independent, slow, pure-Python statement of the profile DP, used only
by the tests: full Gotoh over every path (D, E and F apart at the diagonal,
with the exact model's credits), and a path re-scorer.
``rnd``: 0 floors the fixed-point products, 1 rounds them to the nearest."""

NEG = float("-inf")


def _div(a, d, rnd):
    q, r = divmod(a, d)
    return q + (1 if rnd and 2 * r >= d else 0)


def _open_v(rp, cp, i, j, rnd):
    return _div(cp[j][0] * rp[i][3], 1024, rnd)


def _open_h(rp, cp, i, j, rnd):
    return _div(rp[i][0] * cp[j][3], 1024, rnd)


def _ext_v(rp, cp, i, j, rnd):
    """A gap column consuming A's column i: its residue fraction times B's
    extension cost at boundary j (x 1024)."""
    return _div(rp[i][3] * cp[j][1], 1024 * 1024, rnd)


def _ext_h(rp, cp, i, j, rnd):
    return _div(cp[j][3] * rp[i][1], 1024 * 1024, rnd)


def _credit_v(rp, cp, i, j, rnd):
    """The diagonal state after a run of A-only columns, entering cell (i, j):
    the opens the run took over from B's gaps starting at boundary j - 1."""
    return _div(cp[j - 1][2] * rp[i][3], 1024, rnd)


def _credit_h(rp, cp, i, j, rnd):
    return _div(rp[i - 1][2] * cp[j][3], 1024, rnd)


def best_score(S, rp, cp, m, n, rnd=0):
    """Three states kept apart at the diagonal (D, E: A-only, F: B-only);
    a diagonal move after E or F is credited column 2 of the other side."""
    H = [[NEG] * (n + 1) for _ in range(m + 1)]
    D = [[NEG] * (n + 1) for _ in range(m + 1)]
    E = [[NEG] * (n + 1) for _ in range(m + 1)]
    F = [[NEG] * (n + 1) for _ in range(m + 1)]
    H[0][0] = D[0][0] = 0
    for i in range(m + 1):
        for j in range(n + 1):
            if i > 0:
                E[i][j] = max(H[i - 1][j] - _open_v(rp, cp, i, j, rnd), E[i - 1][j]) - _ext_v(rp, cp, i, j, rnd)
            if j > 0:
                F[i][j] = max(H[i][j - 1] - _open_h(rp, cp, i, j, rnd), F[i][j - 1]) - _ext_h(rp, cp, i, j, rnd)
            if i and j:
                D[i][j] = S[i - 1][j - 1] + max(D[i - 1][j - 1], E[i - 1][j - 1] + _credit_v(rp, cp, i, j, rnd),
                                                F[i - 1][j - 1] + _credit_h(rp, cp, i, j, rnd))
            if i or j:
                H[i][j] = max(D[i][j], E[i][j], F[i][j])
    return H[m][n]


def rescore(path, S, rp, cp, m, n, rnd=0):
    """Score of a forward path of moves (0 both, 1 A only, 2 B only)."""
    i = j = 0
    total = 0
    prev = 0
    for mv in path:
        if mv == 0:
            i += 1
            j += 1
            total += S[i - 1][j - 1]
            if prev == 1:
                total += _credit_v(rp, cp, i, j, rnd)
            elif prev == 2:
                total += _credit_h(rp, cp, i, j, rnd)
        elif mv == 1:
            i += 1
            if prev != 1:
                total -= _open_v(rp, cp, i, j, rnd)
            total -= _ext_v(rp, cp, i, j, rnd)
        else:
            j += 1
            if prev != 2:
                total -= _open_h(rp, cp, i, j, rnd)
            total -= _ext_h(rp, cp, i, j, rnd)
        prev = mv
    assert (i, j) == (m, n)
    return total
