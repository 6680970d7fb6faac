// Baseline for benchmarks/library_speed.py: kernels/posterior.cu as of commit 0935b3f (2026-11-27),
// the kernels issue 43's 10x bar is measured against. Not used by msagpu.
// Pair-HMM posteriors (consistency/pairhmm.py's five-state model) of a batch
// of pairs: forward-backward in probability space along anti-diagonals, each
// anti-diagonal scaled by a power of two. Twin: backend/posterior_cpu.py,
// whose operations this follows one for one: the same products in the same
// association, additions in the same order, __dmul_rn / __dadd_rn so that
// nothing is fused into a multiply-add, and ldexp / frexp for the scaling
// (exact). So both backends give the same bits.
//
// One block per pair; its threads take the cells of one anti-diagonal at a
// time. Three anti-diagonals of the five states are held (`ring`, global
// scratch indexed by row i); the forward pass leaves each cell's scaled match
// value in `post`, and the backward pass turns it into the posterior as soon
// as that cell's backward value is scaled.
#define NS 5
#define MATCH 0
#define POST_THREADS 128

#define MUL(a, b) __dmul_rn((a), (b))
#define ADD(a, b) __dadd_rn((a), (b))

// The largest value of anti-diagonal d's cells (rows lo..hi) over the block,
// then the exponent e that brings it into [0.5, 1) (0 when all are zero).
__device__ int diagonal_exponent(const double* slot, int lo, int hi, double* red)
{
    double top = 0.0;
    for (int i = lo + threadIdx.x; i <= hi; i += blockDim.x)
        for (int s = 0; s < NS; ++s) top = fmax(top, slot[i * NS + s]);
    red[threadIdx.x] = top;
    __syncthreads();
    for (int k = blockDim.x >> 1; k > 0; k >>= 1) {
        if (threadIdx.x < k) red[threadIdx.x] = fmax(red[threadIdx.x], red[threadIdx.x + k]);
        __syncthreads();
    }
    top = red[0];
    __syncthreads();
    int e = 0;
    if (top != 0.0) frexp(top, &e);
    return e;
}

extern "C" __global__ void pair_posteriors(
    const unsigned char* __restrict__ codes, const long long* __restrict__ x_off,
    const long long* __restrict__ y_off, const int* __restrict__ x_len, const int* __restrict__ y_len,
    const double* __restrict__ init, const double* __restrict__ trans, const double* __restrict__ pair,
    const double* __restrict__ single, int A, double* __restrict__ post, const long long* __restrict__ post_off,
    double* __restrict__ ring_all, const long long* __restrict__ ring_off, int* __restrict__ scale_all,
    const long long* __restrict__ scale_off)
{
    __shared__ double red[POST_THREADS];
    __shared__ double z_shared;
    const int p = blockIdx.x;
    const int L1 = x_len[p], L2 = y_len[p];
    const unsigned char* x = codes + x_off[p];
    const unsigned char* y = codes + y_off[p];
    double* P = post + post_off[p];
    double* ring = ring_all + ring_off[p];
    const long long W = (long long)(L1 + 1) * NS;  // one anti-diagonal slot
    int* fs = scale_all + scale_off[p];             // forward scales, diagonals 0..L1+L2
    int* bs = fs + (L1 + L2 + 1);                   // backward scales
    const int last = L1 + L2;

    // forward: diagonal 0 is all zero (the start enters through init below)
    if (threadIdx.x == 0) {
        for (int s = 0; s < NS; ++s) ring[s] = 0.0;
        fs[0] = 0;
    }
    __syncthreads();
    for (int d = 1; d <= last; ++d) {
        const int s1 = fs[d - 1];
        const int s2 = d >= 2 ? fs[d - 2] : 0;
        double* cur = ring + (d % 3) * W;
        const double* p1 = ring + ((d + 2) % 3) * W;
        const double* p2 = ring + ((d + 1) % 3) * W;
        const int lo = max(0, d - L2), hi = min(L1, d);
        for (int i = lo + threadIdx.x; i <= hi; i += blockDim.x) {
            const int j = d - i;
            double v[NS] = {0.0, 0.0, 0.0, 0.0, 0.0};
            if (i > 0 && j > 0) {
                double acc = 0.0;
                for (int s = 0; s < NS; ++s) acc = ADD(acc, MUL(p2[(i - 1) * NS + s], trans[s * NS + MATCH]));
                acc = ldexp(acc, s2 - s1);
                if (i == 1 && j == 1) acc = ADD(acc, ldexp(init[MATCH], -s1));
                v[MATCH] = MUL(pair[x[i - 1] * A + y[j - 1]], acc);
            }
            if (i > 0) {
                for (int k = 1; k <= 3; k += 2) {
                    double acc = ADD(MUL(p1[(i - 1) * NS + MATCH], trans[MATCH * NS + k]),
                                     MUL(p1[(i - 1) * NS + k], trans[k * NS + k]));
                    if (i == 1 && j == 0) acc = ADD(acc, ldexp(init[k], -s1));
                    v[k] = MUL(single[x[i - 1]], acc);
                }
            }
            if (j > 0) {
                for (int k = 2; k <= 4; k += 2) {
                    double acc = ADD(MUL(p1[i * NS + MATCH], trans[MATCH * NS + k]),
                                     MUL(p1[i * NS + k], trans[k * NS + k]));
                    if (i == 0 && j == 1) acc = ADD(acc, ldexp(init[k], -s1));
                    v[k] = MUL(single[y[j - 1]], acc);
                }
            }
            for (int s = 0; s < NS; ++s) cur[i * NS + s] = v[s];
        }
        __syncthreads();
        const int e = diagonal_exponent(cur, lo, hi, red);
        for (int i = lo + threadIdx.x; i <= hi; i += blockDim.x) {
            for (int s = 0; s < NS; ++s) cur[i * NS + s] = ldexp(cur[i * NS + s], -e);
            const int j = d - i;
            if (i > 0 && j > 0) P[(long long)(i - 1) * L2 + (j - 1)] = cur[i * NS + MATCH];
        }
        if (threadIdx.x == 0) fs[d] = s1 + e;
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        const double* F = ring + (last % 3) * W;
        double z = 0.0;
        for (int s = 0; s < NS; ++s) z = ADD(z, MUL(F[L1 * NS + s], init[s]));
        z_shared = z;
    }
    __syncthreads();
    const double z = z_shared;
    const int f_last = fs[last];

    // backward: the end cell takes the end distribution
    double* cur = ring + (last % 3) * W;
    if (threadIdx.x == 0)
        for (int s = 0; s < NS; ++s) cur[L1 * NS + s] = init[s];
    __syncthreads();
    for (int d = last; d >= 0; --d) {
        cur = ring + (d % 3) * W;
        const int lo = max(0, d - L2), hi = min(L1, d);
        int s1 = 0;
        if (d < last) {
            s1 = bs[d + 1];
            const int s2 = d + 2 <= last ? bs[d + 2] : s1;
            const double* n1 = ring + ((d + 1) % 3) * W;
            const double* n2 = ring + ((d + 2) % 3) * W;
            for (int i = lo + threadIdx.x; i <= hi; i += blockDim.x) {
                const int j = d - i;
                for (int s = 0; s < NS; ++s) {
                    double acc = 0.0;
                    if (i < L1 && j < L2)
                        acc = ldexp(MUL(MUL(trans[s * NS + MATCH], pair[x[i] * A + y[j]]), n2[(i + 1) * NS + MATCH]),
                                    s2 - s1);
                    if (i < L1)
                        for (int k = 1; k <= 3; k += 2)
                            acc = ADD(acc, MUL(MUL(trans[s * NS + k], single[x[i]]), n1[(i + 1) * NS + k]));
                    if (j < L2)
                        for (int k = 2; k <= 4; k += 2)
                            acc = ADD(acc, MUL(MUL(trans[s * NS + k], single[y[j]]), n1[i * NS + k]));
                    cur[i * NS + s] = acc;
                }
            }
            __syncthreads();
        }
        const int e = diagonal_exponent(cur, lo, hi, red);
        const int b = s1 + e;
        for (int i = lo + threadIdx.x; i <= hi; i += blockDim.x) {
            for (int s = 0; s < NS; ++s) cur[i * NS + s] = ldexp(cur[i * NS + s], -e);
            const int j = d - i;
            if (i > 0 && j > 0) {
                double* q = P + (long long)(i - 1) * L2 + (j - 1);
                *q = ldexp(__ddiv_rn(MUL(*q, cur[i * NS + MATCH]), z), fs[d] + b - f_last);
            }
        }
        if (threadIdx.x == 0) bs[d] = b;
        __syncthreads();
    }
}

// ProbCons' consistency transformation of a batch of pairs s < t, from one
// or several families (twin: posterior_cpu.consistency_pair): P'(x, y) =
// (sum over u of P_su P_ut) / n, P_ss the identity, kept where at least
// `cutoff`. Pair q's family has n = nq[q] sequences, their lengths at
// lengths[lq[q]..], and the sparse posteriors of its ordered pairs (a, b)
// are rows of a in CSR at base[bq[q] + a n + b]. One block a pair, one thread
// an output row x, which adds its terms in the twin's order (u, then the
// entries of x's row, then theirs), so the sums have the same bits; the row
// lives in `out` (dense, Ls x Lt a pair).
extern "C" __global__ void consistency_pairs(
    const long long* __restrict__ indptr, const int* __restrict__ indices,
    const double* __restrict__ data, const long long* __restrict__ base, const long long* __restrict__ lengths,
    const int* __restrict__ nq, const long long* __restrict__ bq, const long long* __restrict__ lq,
    const int* __restrict__ ps, const int* __restrict__ pt, double* __restrict__ out,
    const long long* __restrict__ out_off, double cutoff)
{
    const int q = blockIdx.x;
    const int s = ps[q], t = pt[q], n = nq[q];
    const long long* B = base + bq[q];
    const long long Ls = lengths[lq[q] + s], Lt = lengths[lq[q] + t];
    double* O = out + out_off[q];
    for (long long x = threadIdx.x; x < Ls; x += blockDim.x) {
        double* row = O + x * Lt;
        for (long long y = 0; y < Lt; ++y) row[y] = 0.0;
        for (int u = 0; u < n; ++u) {
            if (u == s || u == t) {
                const long long b = B[(long long)s * n + t];
                for (long long k = indptr[b + x]; k < indptr[b + x + 1]; ++k)
                    row[indices[k]] = ADD(row[indices[k]], data[k]);
                continue;
            }
            const long long a = B[(long long)s * n + u], c = B[(long long)u * n + t];
            for (long long k = indptr[a + x]; k < indptr[a + x + 1]; ++k) {
                const long long z = indices[k];
                const double p = data[k];
                for (long long m = indptr[c + z]; m < indptr[c + z + 1]; ++m)
                    row[indices[m]] = ADD(row[indices[m]], MUL(p, data[m]));
            }
        }
        for (long long y = 0; y < Lt; ++y) {
            const double v = __ddiv_rn(row[y], (double)n);
            row[y] = v >= cutoff ? v : 0.0;
        }
    }
}
