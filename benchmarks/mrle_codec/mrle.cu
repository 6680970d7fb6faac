// MRLE: modified run-length encoding of an int32 matrix, row by row
// (__init__.py beside it states the rules; cpu.py beside it is the
// sequential twin, and both give the same Ar / Av integers).
//
// One warp per row, 32 columns (or 32 entries of Av) at a time.
//
// Encoding. A cell t continues the run holding t - 1 when the run is of the
// identical kind (it started on 0 or localstop) and M[t] == M[t-1], or when
// it is of the decreasing kind (it started on any other value) and
// M[t] == M[t-1] - 1; otherwise t starts a run, whose kind is set by M[t]
// alone. So the kind of the run holding t is a two-state automaton,
// kind(t) = f_t(kind(t-1)), and the warp finds every kind with an inclusive
// scan of the maps f_t (a map of {I, D} into itself, 2 bits) under
// composition, carried from one tile of 32 columns to the next.
// With the run starts known, cell t adds c(t) = 1 entry to Av if it starts a
// run or is the second cell of one, else 0; the row's length is the sum of
// c (pass 1, mrle_count), the entry's slot is the exclusive sum of c (pass 2,
// mrle_write): a run start writes its value there, and the last cell of a run
// of k >= 2 cells writes k + 2 localstop at (inclusive sum of c) - 1.

#define FULL 0xffffffffu
#define KIND_I 0u  // identical run (0 or localstop)
#define KIND_D 1u  // run of values falling by one

// a map of {I, D}: bit x is the image of x
__device__ __forceinline__ unsigned apply_map(unsigned f, unsigned x) { return (f >> x) & 1u; }

// (f o g)(x) = f(g(x))
__device__ __forceinline__ unsigned compose(unsigned f, unsigned g)
{
    return apply_map(f, g & 1u) | (apply_map(f, (g >> 1) & 1u) << 1);
}

__device__ __forceinline__ unsigned kind_of(int v, int ls) { return (v == 0 || v == ls) ? KIND_I : KIND_D; }

// the run holding a cell of kind `k` with value `prev` goes on to a cell of value `v`
__device__ __forceinline__ bool goes_on(unsigned k, int prev, int v)
{
    return k == KIND_I ? v == prev : (long long)v == (long long)prev - 1;
}

template <bool WRITE>
__device__ __forceinline__ void encode_row(const int* __restrict__ M, int n, int ls,
                                           long long row, long long* __restrict__ count,
                                           const long long* __restrict__ Ar, int* __restrict__ Av)
{
    const unsigned lane = threadIdx.x & 31u;
    const unsigned lt = (1u << lane) - 1u;  // lanes below this one
    const int* R = M + row * (long long)n;
    int* out = WRITE ? Av + Ar[row] : nullptr;
    unsigned carry_kind = KIND_I;  // kind of the last cell of the previous tile
    bool carry_start = false;      // whether that cell starts a run
    long long carry_off = 0;       // entries written before this tile
    long long carry_s = 0;         // the last run start before this tile
    const long long two = 2LL * ls;
    for (int b = 0; b < n; b += 32) {
        const int t = b + (int)lane;
        const bool valid = t < n;
        const int x = valid ? R[t] : 0;
        const int xp = (valid && t > 0) ? R[t - 1] : 0;
        const int xn = (t + 1 < n) ? R[t + 1] : 0;
        // f_t as a 2-bit map; the identity past the row's end
        unsigned f;
        if (!valid) f = 0x2u;
        else {
            const unsigned k = kind_of(x, ls);
            const unsigned kc = k | (k << 1);  // the constant map to k
            if (t == 0) f = kc;
            else if (x == xp) f = KIND_I | (k << 1);              // I stays I, D restarts
            else if ((long long)x == (long long)xp - 1) f = k | (KIND_D << 1);  // D stays D, I restarts
            else f = kc;
        }
        // inclusive scan: F = f_t o ... o f_b
        unsigned F = f;
        for (unsigned d = 1; d < 32; d <<= 1) {
            const unsigned g = __shfl_up_sync(FULL, F, d);
            if (lane >= d) F = compose(F, g);
        }
        const unsigned kind = apply_map(F, carry_kind);
        unsigned kind_prev = __shfl_up_sync(FULL, kind, 1);
        if (lane == 0) kind_prev = carry_kind;
        const bool start = valid && (t == 0 || !goes_on(kind_prev, xp, x));
        bool start_prev = __shfl_up_sync(FULL, start, 1);
        if (lane == 0) start_prev = carry_start;
        const bool second = valid && !start && start_prev;
        const unsigned cmask = __ballot_sync(FULL, start || second);
        const unsigned smask = __ballot_sync(FULL, start);
        if (WRITE && valid) {
            const long long off = carry_off + __popc(cmask & lt);
            const bool last = (t + 1 >= n) || !goes_on(kind, x, xn);
            if (start) out[off] = x;
            if (last && !start) {  // the end of a run of k >= 2 cells
                const unsigned le = smask & (lt | (1u << lane));
                const long long s = le ? (long long)(b + 31 - __clz(le)) : carry_s;
                const long long k = (long long)t - s + 1;
                out[off + ((start || second) ? 1 : 0) - 1] = (int)(k + two);
            }
        }
        carry_kind = __shfl_sync(FULL, kind, 31);
        carry_start = __shfl_sync(FULL, start, 31);
        carry_off += __popc(cmask);
        if (smask) carry_s = b + 31 - __clz(smask);
    }
    if (!WRITE && lane == 0) count[row] = carry_off;
}

// pass 1: count[i] = entries of Av that row i needs
extern "C" __global__ void mrle_count(const int* __restrict__ M, long long m, int n, int ls,
                                      long long* __restrict__ count)
{
    const long long row = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (row >= m) return;  // whole warps leave together
    encode_row<false>(M, n, ls, row, count, nullptr, nullptr);
}

// pass 2: row i's entries into Av[Ar[i] : Ar[i + 1]]
extern "C" __global__ void mrle_write(const int* __restrict__ M, long long m, int n, int ls,
                                      const long long* __restrict__ Ar, int* __restrict__ Av)
{
    const long long row = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (row >= m) return;
    encode_row<true>(M, n, ls, row, nullptr, Ar, Av);
}

#define SERIAL_MAX 8  // a lane writes a count's cells itself up to this many, else the warp does

__device__ __forceinline__ int run_cell(int prev, int ls, long long t)
{
    return (prev == 0 || prev == ls) ? prev : (int)((long long)prev - 1 - t);
}

// decoding: one warp per row, 32 entries of Av at a time. An entry covers one
// cell (a value) or a - 2 localstop - 1 cells (a count, continuing the run of
// the value before it); an inclusive scan of the widths gives each entry's
// first column.
extern "C" __global__ void mrle_decode(const long long* __restrict__ Ar, const int* __restrict__ Av,
                                       long long m, int n, int ls, int* __restrict__ M)
{
    const long long row = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (row >= m) return;
    const int lane = threadIdx.x & 31;
    int* R = M + row * (long long)n;
    const long long lo = Ar[row], len = Ar[row + 1] - lo;
    const long long two = 2LL * ls;
    int carry_val = 0;       // the last entry of the previous tile (a value when a count follows)
    long long carry_col = 0;  // cells written before this tile
    for (long long b = 0; b < len; b += 32) {
        const bool valid = b + lane < len;
        const int a = valid ? Av[lo + b + lane] : 0;
        const bool code = valid && (long long)a > two;
        const long long w = !valid ? 0 : (code ? (long long)a - two - 1 : 1);
        long long incl = w;
        for (int d = 1; d < 32; d <<= 1) {
            const long long g = __shfl_up_sync(FULL, incl, d);
            if (lane >= d) incl += g;
        }
        const long long col = carry_col + incl - w;
        int prev = __shfl_up_sync(FULL, a, 1);
        if (lane == 0) prev = carry_val;
        if (valid && !code) R[col] = a;
        if (code && w <= SERIAL_MAX)
            for (long long t = 0; t < w; ++t) R[col + t] = run_cell(prev, ls, t);
        unsigned big = __ballot_sync(FULL, code && w > SERIAL_MAX);
        while (big) {  // the warp writes each long run, 32 cells a step
            const int src = __ffs(big) - 1;
            big &= big - 1;
            const long long c0 = __shfl_sync(FULL, col, src);
            const long long wn = __shfl_sync(FULL, w, src);
            const int p = __shfl_sync(FULL, prev, src);
            for (long long t = lane; t < wn; t += 32) R[c0 + t] = run_cell(p, ls, t);
        }
        carry_val = __shfl_sync(FULL, a, 31);
        carry_col += __shfl_sync(FULL, incl, 31);
    }
}
