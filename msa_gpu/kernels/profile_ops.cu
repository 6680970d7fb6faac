// Level-wide profile kernels: statistics, column scores and merges for every
// pair of one tree level in one launch each. Integer arithmetic only; the
// numba twins in msa_gpu/backend/cpu.py give the same integers.
//
// A level has P pairs; profile q = 2p is pair p's A side, q = 2p + 1 its B side.
// Profile q: k[q] members x L[q] columns of uint8 codes at code_off[q]
// (row-major), member weights at w_off[q], total weight W[q], gap code gap[q].
#define VEC 24     // residue slots per column (alphabet size <= 23)
#define FRAC 1024  // fixed-point one for fractions

// Per profile q, column c (< L) and boundary b = c (0..L):
//   vec[col_off[q] + c][x]  = weighted count of residue x (A side), or
//                             sum_y M[x][y] * count(y) (B side, M = mats[mat[q]])
//   resid[col_off[q] + c]   = residue weight fraction of column c (0..FRAC)
//   rowp[bnd_off[q] + b]    = [open, ext_inner, ext_term, resid(b-1)]
// open = go * both(b) / FRAC, both(b) = fraction with residues on both sides of
// boundary b (ends: the end column's resid, scaled by tgo / FRAC).
extern "C" __global__ void profile_stats(
    const unsigned char* __restrict__ codes, const long long* __restrict__ code_off,
    const int* __restrict__ k, const int* __restrict__ L,
    const long long* __restrict__ weights, const long long* __restrict__ w_off,
    const long long* __restrict__ W, const int* __restrict__ gap,
    const int* __restrict__ gaps,  // per profile: go, ge, tgo, tge
    const int* __restrict__ mat, const long long* __restrict__ mats,
    const long long* __restrict__ col_off, const long long* __restrict__ bnd_off,
    long long* __restrict__ vec, int* __restrict__ resid, int* __restrict__ rowp)
{
    const int q = blockIdx.x;
    const int kq = k[q], Lq = L[q], g = gap[q];
    const unsigned char* cq = codes + code_off[q];
    const long long* wq = weights + w_off[q];
    const long long Wq = W[q];
    const long long go = gaps[4 * q], ge = gaps[4 * q + 1], tgo = gaps[4 * q + 2], tge = gaps[4 * q + 3];
    const bool b_side = (q & 1) == 1;
    const long long* M = mats + (long long)mat[q] * VEC * VEC;
    for (int c = threadIdx.x; c <= Lq; c += blockDim.x) {
        long long acc[VEC];
        for (int x = 0; x < VEC; ++x) acc[x] = 0;
        long long res_c = 0, res_prev = 0, both = 0;
        for (int s = 0; s < kq; ++s) {
            const long long w = wq[s];
            const bool here = c < Lq && cq[(long long)s * Lq + c] != g;
            const bool prev = c > 0 && cq[(long long)s * Lq + c - 1] != g;
            if (here) { acc[cq[(long long)s * Lq + c]] += w; res_c += w; }
            if (prev) res_prev += w;
            if (here && prev) both += w;
        }
        const long long fc = res_c * FRAC / Wq, fp = res_prev * FRAC / Wq;
        if (c < Lq) {
            long long* out = vec + (col_off[q] + c) * VEC;
            if (b_side) {
                for (int x = 0; x < VEC; ++x) {
                    long long t = 0;
                    for (int y = 0; y < VEC; ++y) t += M[x * VEC + y] * acc[y];
                    out[x] = t;
                }
            } else {
                for (int x = 0; x < VEC; ++x) out[x] = acc[x];
            }
            resid[col_off[q] + c] = (int)fc;
        }
        long long open;
        if (c == 0) open = go * fc * tgo / FRAC;
        else if (c == Lq) open = go * fp * tgo / FRAC;
        else open = go * (both * FRAC / Wq);
        int* r = rowp + (bnd_off[q] + c) * 4;
        r[0] = (int)(open / FRAC);
        r[1] = c > 0 ? (int)(ge * fp / FRAC) : 0;
        r[2] = c > 0 ? (int)(ge * fp * tge / (FRAC * FRAC)) : 0;
        r[3] = c > 0 ? (int)fp : 0;
    }
}

// S[i][j] = floor(sum_x vecA[i][x] * vecB[j][x] / (W_A * W_B))
//           - gap_pair * ((FRAC - rA) rB + rA (FRAC - rB)) / FRAC^2
extern "C" __global__ void column_scores(
    const long long* __restrict__ vec, const int* __restrict__ resid,
    const long long* __restrict__ col_off, const int* __restrict__ L,
    const long long* __restrict__ W, const int* __restrict__ gap_pair,
    int* __restrict__ S, const long long* __restrict__ s_off)
{
    const int p = blockIdx.y;
    const int qa = 2 * p, qb = 2 * p + 1;
    const int m = L[qa], n = L[qb];
    const long long cells = (long long)m * n;
    const long long denom = W[qa] * W[qb];
    const long long gp = gap_pair[p];
    const long long* va = vec + col_off[qa] * VEC;
    const long long* vb = vec + col_off[qb] * VEC;
    const int* ra = resid + col_off[qa];
    const int* rb = resid + col_off[qb];
    for (long long cell = (long long)blockIdx.x * blockDim.x + threadIdx.x; cell < cells;
         cell += (long long)gridDim.x * blockDim.x) {
        const int i = (int)(cell / n), j = (int)(cell % n);
        long long num = 0;
        for (int x = 0; x < VEC; ++x) num += va[(long long)i * VEC + x] * vb[(long long)j * VEC + x];
        long long s = num / denom;
        if ((num % denom != 0) && (num < 0)) s -= 1;  // floor division
        const long long fa = ra[i], fb = rb[j];
        s -= ((FRAC - fa) * fb + fa * (FRAC - fb)) * gp / (FRAC * FRAC);
        S[s_off[p] + cell] = (int)s;
    }
}

// Merged profile of pair p: rows of A then rows of B, columns along the path
// (moves stored from the end backwards: 0 both, 1 A only, 2 B only).
extern "C" __global__ void merge_profiles(
    const unsigned char* __restrict__ codes, const long long* __restrict__ code_off,
    const int* __restrict__ k, const int* __restrict__ L, const int* __restrict__ gap,
    const unsigned char* __restrict__ path, const long long* __restrict__ path_off,
    const int* __restrict__ path_len, int* __restrict__ cols,
    unsigned char* __restrict__ out, const long long* __restrict__ out_off)
{
    const int p = blockIdx.x;
    const int qa = 2 * p, qb = 2 * p + 1;
    const int len = path_len[p];
    const unsigned char* pp = path + path_off[p];
    int* ca = cols + 2 * path_off[p];
    int* cb = ca + len;
    if (threadIdx.x == 0) {
        int ia = 0, ib = 0;
        for (int t = 0; t < len; ++t) {
            const unsigned char mv = pp[len - 1 - t];
            ca[t] = mv != 2 ? ia++ : -1;
            cb[t] = mv != 1 ? ib++ : -1;
        }
    }
    __syncthreads();
    const int ka = k[qa], kb = k[qb], la = L[qa], lb = L[qb];
    const unsigned char* A = codes + code_off[qa];
    const unsigned char* B = codes + code_off[qb];
    unsigned char* o = out + out_off[p];
    const long long total = (long long)(ka + kb) * len;
    for (long long e = threadIdx.x; e < total; e += blockDim.x) {
        const int s = (int)(e / len), t = (int)(e % len);
        unsigned char v;
        if (s < ka) v = ca[t] >= 0 ? A[(long long)s * la + ca[t]] : (unsigned char)gap[qa];
        else v = cb[t] >= 0 ? B[(long long)(s - ka) * lb + cb[t]] : (unsigned char)gap[qb];
        o[e] = v;
    }
}
