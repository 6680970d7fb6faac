// Pair-HMM posteriors (consistency/pairhmm.py's five-state model) of a batch
// of pairs: forward-backward in probability space along anti-diagonals, each
// anti-diagonal scaled by a power of two. Twin: backend/posterior_cpu.py,
// whose operations this follows one for one: the same products in the same
// association, additions in the same order, __dmul_rn / __dadd_rn so that
// nothing is fused into a multiply-add, and the scaling exact (a product by
// 2^k where 2^k is a normal double, which is ldexp to the bit, else ldexp;
// frexp for the exponents). So both backends give the same bits.
//
// One block per pair (`which[blockIdx.x]`: a launch takes pairs of one size
// class, the block as wide as its longest anti-diagonal needs); its threads
// take the cells of one anti-diagonal at a time. Three anti-diagonals of the
// five states are held (`ring`: state s of row i at [s * R + i], R = L1 + 1,
// so a warp's cells are adjacent), in shared memory when R <= shared_rows
// (the launch's dynamic shared memory), else in global scratch. Each thread
// keeps the largest value of its cells; the block's largest is one warp
// shuffle and one barrier away, and each thread rescales its own cells, so
// an anti-diagonal costs two barriers. The forward pass leaves each cell's
// scaled match value in `post`, and the backward pass turns it into the
// posterior as soon as that cell's backward value is scaled.
// NS (states, 5), MATCH (the match state, 0) and MAX_WARPS (8: blocks of at
// most 256 threads) come from msa_gpu/kernels/constants.py
// (msa_gpu.kernels.full_source).

#define MUL(a, b) __dmul_rn((a), (b))
#define ADD(a, b) __dadd_rn((a), (b))

// 2^k where it is a normal double (v * 2^k is then ldexp(v, k) to the bit:
// one correctly rounded product), else 0.0 (take ldexp): posterior_cpu._pow2.
__device__ __forceinline__ double pow2_or_zero(int k)
{
    return (k >= -1022 && k <= 1023) ? __longlong_as_double((long long)(k + 1023) << 52) : 0.0;
}

__device__ __forceinline__ double times_pow2(double v, double f, int k)
{
    return f != 0.0 ? MUL(v, f) : ldexp(v, k);
}

// The largest of every thread's `top` (blockDim.x a multiple of 32), to every
// thread; the caller's next barrier comes before `red` is written again.
__device__ __forceinline__ double block_max(double top, double* red)
{
    for (int o = 16; o > 0; o >>= 1) top = fmax(top, __shfl_xor_sync(0xffffffffu, top, o));
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = top;
    __syncthreads();
    top = red[0];
    for (int w = 1; w < (int)(blockDim.x >> 5); ++w) top = fmax(top, red[w]);
    return top;
}

// The same for unsigned words (one warp instruction, then a barrier).
__device__ __forceinline__ unsigned block_max_word(unsigned top, unsigned* red)
{
#if __CUDA_ARCH__ >= 800
    top = __reduce_max_sync(0xffffffffu, top);
#else
    for (int o = 16; o > 0; o >>= 1) top = max(top, __shfl_xor_sync(0xffffffffu, top, o));
#endif
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = top;
    __syncthreads();
    top = red[0];
    for (int w = 1; w < (int)(blockDim.x >> 5); ++w) top = max(top, red[w]);
    return top;
}

__device__ __forceinline__ int exponent_of(double top)
{
    int e = 0;
    if (top != 0.0) frexp(top, &e);
    return e;
}

// The high word of a value >= 0: in the order of the values, and the
// largest value's exponent field is the largest word's.
__device__ __forceinline__ unsigned high_word(double v) { return (unsigned)__double2hiint(v); }

// frexp's exponent of the largest value of an anti-diagonal (rows lo..hi of
// `cur`, this thread's rows from lo + threadIdx.x by blockDim.x), from the
// block's largest high word `word` where that value is normal; else (all
// subnormal or zero: a slow path all threads take together) from the values.
template <typename Ring>
__device__ __forceinline__ int diagonal_exponent(unsigned word, Ring cur, int R, int lo, int hi, unsigned* red_w,
                                                 double* red)
{
    word = block_max_word(word, red_w);
    if (word >= 0x00100000u) return (int)(word >> 20) - 1022;
    double top = 0.0;
    for (int i = lo + threadIdx.x; i <= hi; i += blockDim.x)
        for (int s = 0; s < NS; ++s) top = fmax(top, cur[s * R + i]);
    return exponent_of(block_max(top, red));
}

#ifdef POST_MIN_BLOCKS
#define POST_BOUNDS __launch_bounds__(MAX_WARPS * 32, POST_MIN_BLOCKS)
#else
#define POST_BOUNDS
#endif

// One pair's posteriors with its three anti-diagonals at `ring` (shared or
// global memory: the template keeps the compiler's address space).
template <typename Ring>
__device__ __forceinline__ void pair_posteriors_in(
    Ring ring, const unsigned char* __restrict__ x, const unsigned char* __restrict__ y, int L1, int L2,
    const double* __restrict__ tr, const double* __restrict__ ini, const double* __restrict__ pair,
    const double* __restrict__ single, int A, double* __restrict__ P, int* __restrict__ fs, unsigned* red_w,
    double* red, double* z_shared)
{
    const int R = L1 + 1;
    const int W = R * NS;  // one anti-diagonal slot
    const int last = L1 + L2;

    // forward: diagonal 0 is all zero (the start enters through init below)
    if (threadIdx.x == 0) {
        for (int s = 0; s < NS; ++s) ring[s * R] = 0.0;
        fs[0] = 0;
    }
    __syncthreads();
    int s1 = 0, s2 = 0;  // the scales of diagonals d - 1 and d - 2
    for (int d = 1; d <= last; ++d) {
        const Ring cur = ring + (d % 3) * W;
        const Ring p1 = ring + ((d + 2) % 3) * W;
        const Ring p2 = ring + ((d + 1) % 3) * W;
        const double f21 = pow2_or_zero(s2 - s1);
        const int lo = max(0, d - L2), hi = min(L1, d);
        unsigned word = 0;
        for (int i = lo + threadIdx.x; i <= hi; i += blockDim.x) {
            const int j = d - i;
            double v[NS] = {0.0, 0.0, 0.0, 0.0, 0.0};
            if (i > 0 && j > 0) {
                double acc = 0.0;
#pragma unroll
                for (int s = 0; s < NS; ++s) acc = ADD(acc, MUL(p2[s * R + i - 1], tr[s * NS + MATCH]));
                acc = times_pow2(acc, f21, s2 - s1);
                if (i == 1 && j == 1) acc = ADD(acc, ldexp(ini[MATCH], -s1));
                v[MATCH] = MUL(pair[x[i - 1] * A + y[j - 1]], acc);
            }
            if (i > 0) {
                const double e = single[x[i - 1]];
#pragma unroll
                for (int k = 1; k <= 3; k += 2) {
                    double acc = ADD(MUL(p1[MATCH * R + i - 1], tr[MATCH * NS + k]), MUL(p1[k * R + i - 1], tr[k * NS + k]));
                    if (i == 1 && j == 0) acc = ADD(acc, ldexp(ini[k], -s1));
                    v[k] = MUL(e, acc);
                }
            }
            if (j > 0) {
                const double e = single[y[j - 1]];
#pragma unroll
                for (int k = 2; k <= 4; k += 2) {
                    double acc = ADD(MUL(p1[MATCH * R + i], tr[MATCH * NS + k]), MUL(p1[k * R + i], tr[k * NS + k]));
                    if (i == 0 && j == 1) acc = ADD(acc, ldexp(ini[k], -s1));
                    v[k] = MUL(e, acc);
                }
            }
#pragma unroll
            for (int s = 0; s < NS; ++s) {
                cur[s * R + i] = v[s];
                word = max(word, high_word(v[s]));
            }
        }
        const int e = diagonal_exponent(word, cur, R, lo, hi, red_w, red);
        const double fe = pow2_or_zero(-e);
        for (int i = lo + threadIdx.x; i <= hi; i += blockDim.x) {  // this thread's own cells
#pragma unroll
            for (int s = 0; s < NS; ++s) cur[s * R + i] = times_pow2(cur[s * R + i], fe, -e);
            const int j = d - i;
            if (i > 0 && j > 0) P[(long long)(i - 1) * L2 + (j - 1)] = cur[MATCH * R + i];
        }
        s2 = s1;
        s1 += e;
        if (threadIdx.x == 0) fs[d] = s1;
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        const Ring F = ring + (last % 3) * W;
        double z = 0.0;
        for (int s = 0; s < NS; ++s) z = ADD(z, MUL(F[s * R + L1], ini[s]));
        *z_shared = z;
    }
    __syncthreads();
    const double z = *z_shared;
    const int f_last = s1;

    // backward: the end cell takes the end distribution
    int b1 = 0, b2 = 0;  // the scales of diagonals d + 1 and d + 2
    for (int d = last; d >= 0; --d) {
        const Ring cur = ring + (d % 3) * W;
        const Ring n1 = ring + ((d + 1) % 3) * W;
        const Ring n2 = ring + ((d + 2) % 3) * W;
        const int lo = max(0, d - L2), hi = min(L1, d);
        unsigned word = 0;
        int sb = 0;  // diagonal d + 1's scale (0 for the last diagonal)
        if (d == last) {
            if (threadIdx.x == 0)
                for (int s = 0; s < NS; ++s) {
                    cur[s * R + L1] = ini[s];
                    word = max(word, high_word(ini[s]));
                }
        } else {
            sb = b1;
            const int s2b = d + 2 <= last ? b2 : b1;
            const double f21 = pow2_or_zero(s2b - sb);
            for (int i = lo + threadIdx.x; i <= hi; i += blockDim.x) {
                const int j = d - i;
                const double ex = i < L1 ? single[x[i]] : 0.0;
                const double ey = j < L2 ? single[y[j]] : 0.0;
                const double em = i < L1 && j < L2 ? pair[x[i] * A + y[j]] : 0.0;
#pragma unroll
                for (int s = 0; s < NS; ++s) {
                    double acc = 0.0;
                    if (i < L1 && j < L2)
                        acc = times_pow2(MUL(MUL(tr[s * NS + MATCH], em), n2[MATCH * R + i + 1]), f21, s2b - sb);
                    if (i < L1)
#pragma unroll
                        for (int k = 1; k <= 3; k += 2) acc = ADD(acc, MUL(MUL(tr[s * NS + k], ex), n1[k * R + i + 1]));
                    if (j < L2)
#pragma unroll
                        for (int k = 2; k <= 4; k += 2) acc = ADD(acc, MUL(MUL(tr[s * NS + k], ey), n1[k * R + i]));
                    cur[s * R + i] = acc;
                    word = max(word, high_word(acc));
                }
            }
        }
        const int e = diagonal_exponent(word, cur, R, lo, hi, red_w, red);
        const int b = sb + e;
        const double fe = pow2_or_zero(-e);
        const int k_post = fs[d] + b - f_last;
        const double f_post = pow2_or_zero(k_post);
        for (int i = lo + threadIdx.x; i <= hi; i += blockDim.x) {  // this thread's own cells
#pragma unroll
            for (int s = 0; s < NS; ++s) cur[s * R + i] = times_pow2(cur[s * R + i], fe, -e);
            const int j = d - i;
            if (i > 0 && j > 0) {
                double* q = P + (long long)(i - 1) * L2 + (j - 1);
                *q = times_pow2(__ddiv_rn(MUL(*q, cur[MATCH * R + i]), z), f_post, k_post);
            }
        }
        b2 = b1;
        b1 = b;
        __syncthreads();
    }
}

// The kernels: `pair_posteriors` keeps the anti-diagonals in the launch's
// dynamic shared memory (its pairs have R <= shared_rows), and
// `pair_posteriors_global` in global scratch at ring_all + ring_off[p].
#define POSTERIOR_KERNEL_ARGS                                                                                       \
    const unsigned char* __restrict__ codes, const long long* __restrict__ x_off,                                  \
        const long long* __restrict__ y_off, const int* __restrict__ x_len, const int* __restrict__ y_len,          \
        const double* __restrict__ init, const double* __restrict__ trans, const double* __restrict__ pair,         \
        const double* __restrict__ single, int A, double* __restrict__ post, const long long* __restrict__ post_off, \
        double* __restrict__ ring_all, const long long* __restrict__ ring_off, int* __restrict__ scale_all,         \
        const long long* __restrict__ scale_off, const int* __restrict__ which, int shared_rows

#define POSTERIOR_KERNEL_BODY(RING)                                                                                 \
    __shared__ unsigned red_w[MAX_WARPS];                                                                          \
    __shared__ double red[MAX_WARPS];                                                                              \
    __shared__ double tr[NS * NS];                                                                                 \
    __shared__ double ini[NS];                                                                                     \
    __shared__ double z_shared;                                                                                    \
    const int p = which[blockIdx.x];                                                                               \
    for (int k = threadIdx.x; k < NS * NS; k += blockDim.x) tr[k] = trans[k];                                      \
    if (threadIdx.x < NS) ini[threadIdx.x] = init[threadIdx.x];                                                    \
    __syncthreads();                                                                                               \
    pair_posteriors_in(RING, codes + x_off[p], codes + y_off[p], x_len[p], y_len[p], tr, ini, pair, single, A,      \
                       post + post_off[p], scale_all + scale_off[p], red_w, red, &z_shared);

extern "C" __global__ void POST_BOUNDS pair_posteriors(POSTERIOR_KERNEL_ARGS)
{
    extern __shared__ double ring_shared[];
    POSTERIOR_KERNEL_BODY(ring_shared)
}

extern "C" __global__ void POST_BOUNDS pair_posteriors_global(POSTERIOR_KERNEL_ARGS)
{
    POSTERIOR_KERNEL_BODY(ring_all + ring_off[which[blockIdx.x]])
}

// ProbCons' consistency transformation of a batch of pairs s < t, from one
// or several families (twin: posterior_cpu.consistency_pair): P'(x, y) =
// (sum over u of P_su P_ut) / n, P_ss the identity, kept where at least
// `cutoff`. Pair q's family has n = nq[q] sequences, their lengths at
// lengths[lq[q]..], and the sparse posteriors of its ordered pairs (a, b)
// are rows of a in CSR at base[bq[q] + a n + b], their values single
// precision. The sums are fixed point: each term p * p' (exact in double,
// both being floats) times 2^F, F = 61 - bit_length(n), truncated to an
// integer; a cell's sum does not depend on its order, and the twin adds the
// same integers. It stays below 2^63: each third u adds at most (row x of
// P_su's sum) x (the largest of P_ut) <= about 1, the direct posterior 2, so
// a cell holds at most about n 2^F < 2^61. A block takes
// CONS_TILE rows x of one pair (`blk_q`, `blk_x`), a warp one row at a time
// (`cons_terms`): its lanes add the terms with atomics into the row's
// integer sums (shared memory when Lt <= shared_cols, else the output row
// itself), then the row is divided by n and cut into `out` (each pair's
// Ls x Lt matrix, dense).
#ifndef CONS_WARPS
#define CONS_WARPS 4
#endif
#ifndef CONS_TILE
#define CONS_TILE 8
#endif

typedef unsigned long long cons_acc;

__device__ __forceinline__ int cons_frac_bits(int n) { return 61 - (32 - __clz(n)); }

__device__ __forceinline__ double cons_pow2(int k) { return __longlong_as_double((long long)(k + 1023) << 52); }

// One term's fixed point: v * 2^F (v * one exact), truncated.
__device__ __forceinline__ cons_acc cons_fix(double scaled) { return (cons_acc)__double2ll_rz(scaled); }

// Adds every term of row x to `acc` (Lt integer sums), 32 sequences u at a
// time: lane l takes u0 + l's part of x's row of P_su (its entries z), the
// warp spreads those entries over its lanes (entry i of the concatenation to
// lane i mod 32), and each lane adds its entry's row z of P_ut term by term.
// (Spreading the terms themselves over the lanes instead, a u at a time, cost
// a search of shuffles for every 32 terms: bralibase3_dev's two passes took
// 1.15 + 1.74 s that way on the H100, 0.49 + 1.24 s this way, the same sums.)
__device__ __forceinline__ void cons_terms(cons_acc* acc, long long x, int s, int t, int n, long long direct,
                                           double one, const long long* __restrict__ indptr,
                                           const int* __restrict__ indices, const float* __restrict__ data,
                                           const long long* __restrict__ B, int lane)
{
    {  // P_ss P_st and P_st P_tt: the direct posteriors, twice
        const long long k1 = indptr[direct + x + 1];
        for (long long k = indptr[direct + x] + lane; k < k1; k += 32)
            atomicAdd(acc + indices[k], 2 * cons_fix(__dmul_rn((double)data[k], one)));
    }
    for (int u0 = 0; u0 < n; u0 += 32) {
        const int u = u0 + lane;
        long long k0 = 0, c = 0;
        int len = 0;
        if (u < n && u != s && u != t) {
            const long long a = B[(long long)s * n + u];
            c = B[(long long)u * n + t];
            k0 = indptr[a + x];
            len = (int)(indptr[a + x + 1] - k0);
        }
        int incl = len;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const int v = __shfl_up_sync(0xffffffffu, incl, o);
            if (lane >= o) incl += v;
        }
        const int total = __shfl_sync(0xffffffffu, incl, 31);
        for (int i0 = 0; i0 < total; i0 += 32) {
            const int i = i0 + lane;
            int r = 0;  // the first lane whose inclusive length passes i
#pragma unroll
            for (int step = 16; step > 0; step >>= 1) {
                const int v = __shfl_sync(0xffffffffu, incl, r + step - 1);
                if (v <= i) r += step;
            }
            const int before = __shfl_sync(0xffffffffu, incl - len, r);
            const long long kr = __shfl_sync(0xffffffffu, k0, r);
            const long long cr = __shfl_sync(0xffffffffu, c, r);
            if (i < total) {
                const long long e = kr + (i - before);
                const long long z = indices[e];
                const double p = __dmul_rn((double)data[e], one);
                const long long m1 = indptr[cr + z + 1];
                for (long long m = indptr[cr + z]; m < m1; ++m)
                    atomicAdd(acc + indices[m], cons_fix(__dmul_rn(p, (double)data[m])));
            }
        }
    }
}

// Output row x: its sums in `acc` (shared memory, or the row itself, each
// lane converting its own cells in place), then divided by n and cut.
__device__ __forceinline__ void cons_output_row(cons_acc* acc, double* row, long long x, int s, int t, int n,
                                                long long Lt, long long direct, double one, double inv_one,
                                                double cutoff, const long long* __restrict__ indptr,
                                                const int* __restrict__ indices, const float* __restrict__ data,
                                                const long long* __restrict__ B, int lane)
{
    for (long long y = lane; y < Lt; y += 32) acc[y] = 0;
    __syncwarp();
    cons_terms(acc, x, s, t, n, direct, one, indptr, indices, data, B, lane);
    __syncwarp();
    for (long long y = lane; y < Lt; y += 32) {
        const double v = __ddiv_rn(__dmul_rn(__ll2double_rn((long long)acc[y]), inv_one), (double)n);
        row[y] = v >= cutoff ? v : 0.0;
    }
    __syncwarp();
}

extern "C" __global__ void __launch_bounds__(CONS_WARPS * 32) consistency_pairs(
    const long long* __restrict__ indptr, const int* __restrict__ indices,
    const float* __restrict__ data, const long long* __restrict__ base, const long long* __restrict__ lengths,
    const int* __restrict__ nq, const long long* __restrict__ bq, const long long* __restrict__ lq,
    const int* __restrict__ ps, const int* __restrict__ pt, double* __restrict__ out,
    const long long* __restrict__ out_off, double cutoff, const int* __restrict__ blk_q,
    const int* __restrict__ blk_x, int shared_cols)
{
    extern __shared__ cons_acc acc_shared[];
    const int q = blk_q[blockIdx.x];
    const int s = ps[q], t = pt[q], n = nq[q];
    const long long* B = base + bq[q];
    const long long Ls = lengths[lq[q] + s], Lt = lengths[lq[q] + t];
    double* O = out + out_off[q];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const long long direct = B[(long long)s * n + t];
    const int F = cons_frac_bits(n);
    const double one = cons_pow2(F), inv_one = cons_pow2(-F);
    const long long x_end = min(Ls, (long long)blk_x[blockIdx.x] + CONS_TILE);
    for (long long x = blk_x[blockIdx.x] + warp; x < x_end; x += CONS_WARPS) {
        double* row = O + x * Lt;
        if (Lt <= shared_cols)  // two inlined copies, so that the shared sums' atomics are shared-memory ones
            cons_output_row(acc_shared + (long long)warp * shared_cols, row, x, s, t, n, Lt, direct, one, inv_one,
                            cutoff, indptr, indices, data, B, lane);
        else
            cons_output_row((cons_acc*)row, row, x, s, t, n, Lt, direct, one, inv_one, cutoff, indptr, indices, data,
                            B, lane);
    }
}
