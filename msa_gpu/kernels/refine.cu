// Refinement (msa_gpu/refine/bipartitions.py): the score of a given path through a pair's
// DP under the very recurrences of profile_dp (kernels/profile.cu), so that
// a realignment's gain is its DP score less the score of the path the
// alignment already has.
//
// moves[move_off[p] + t], t < move_len[p]: the path from (0, 0), forwards
// (0 both columns, 1 A's column only, 2 B's column only). A run of moves 1
// (or 2) opens once and extends; the costs are those of dp_cell. Long pairs
// (no column scores) score 0.

// kernels/profile.cu's fixed_div (the operands here are never negative)
// and gap_ext: a new gap column's extension. FRAC (the fixed-point one,
// 1024) comes from msa_gpu/kernels/constants.py (msa_gpu.kernels.full_source).
__device__ __forceinline__ long long fixed_div(long long a, long long d, int rnd) { return (a + (rnd ? d / 2 : 0)) / d; }
__device__ __forceinline__ int gap_ext(long long res, long long ext, int rnd)
{
    return (int)fixed_div(res * ext, (long long)FRAC * FRAC, rnd);
}

extern "C" __global__ void path_score(
    const int* __restrict__ S, const long long* __restrict__ s_off,
    const int* __restrict__ rowp, const long long* __restrict__ row_off,
    const int* __restrict__ colp, const long long* __restrict__ col_off,
    const int* __restrict__ dims, const unsigned char* __restrict__ moves,
    const long long* __restrict__ move_off, const int* __restrict__ move_len,
    const int n_pairs, long long* __restrict__ out)
{
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n_pairs) return;
    const int m = dims[3 * p], n = dims[3 * p + 1], rnd = dims[3 * p + 2];
    if (s_off[p + 1] - s_off[p] != (long long)m * n) { out[p] = 0; return; }  // a long pair: no scores
    const int* Sp = S + s_off[p];
    const int* rp = rowp + 4 * row_off[p];
    const int* cp = colp + 4 * col_off[p];
    const unsigned char* mv = moves + move_off[p];
    long long score = 0;
    int i = 0, j = 0, st = 0;
    for (int t = 0; t < move_len[p]; ++t) {
        const int move = mv[t];
        if (move == 0) {  // after a gap run: the opens it took over (kernels/profile.cu: dp_cell)
            if (st == 1) score += fixed_div((long long)cp[4 * j + 2] * rp[4 * (i + 1) + 3], FRAC, rnd);
            else if (st == 2) score += fixed_div((long long)rp[4 * i + 2] * cp[4 * (j + 1) + 3], FRAC, rnd);
            score += Sp[(long long)i * n + j];
            ++i; ++j; st = 0;
        } else if (move == 1) {
            ++i;
            if (st != 1) score -= fixed_div((long long)cp[4 * j] * rp[4 * i + 3], FRAC, rnd);
            score -= gap_ext(rp[4 * i + 3], cp[4 * j + 1], rnd);
            st = 1;
        } else {
            ++j;
            if (st != 2) score -= fixed_div((long long)rp[4 * i] * cp[4 * j + 3], FRAC, rnd);
            score -= gap_ext(cp[4 * j + 3], rp[4 * i + 1], rnd);
            st = 2;
        }
    }
    out[p] = score;
}

// The codes of many profiles cut from alignments, one after another:
// profile q is rows rows[row_off[q] ..] (k[q]) by columns cols[col_off[q] ..]
// (L[q]) of an alignment of width[q] columns at base[q] in flat; its codes
// go to out[code_off[q] ..], row-major. One thread per output code.
extern "C" __global__ void gather_profiles(
    const unsigned char* __restrict__ flat, const long long* __restrict__ rows,
    const long long* __restrict__ row_off, const long long* __restrict__ cols,
    const long long* __restrict__ col_off, const long long* __restrict__ L,
    const long long* __restrict__ base, const long long* __restrict__ width,
    const long long* __restrict__ code_off, const int n_prof, unsigned char* __restrict__ out)
{
    const long long total = code_off[n_prof];
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {
        int lo = 0, hi = n_prof;  // code_off[lo] <= e < code_off[hi]
        while (hi - lo > 1) {
            const int mid = (lo + hi) >> 1;
            if (code_off[mid] <= e) lo = mid; else hi = mid;
        }
        const long long local = e - code_off[lo];
        const long long r = rows[row_off[lo] + local / L[lo]];
        const long long c = cols[col_off[lo] + local % L[lo]];
        out[e] = flat[base[lo] + r * width[lo] + c];
    }
}
