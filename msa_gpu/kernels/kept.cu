// The kept cells of a run of flat dense matrices, in order, as (matrix id,
// row, column, single-precision value): the cut after each phase of the
// posterior library (backend/posterior_gpu.py: _kept). Two passes over
// the values: a count a chunk of KEPT_CHUNK cells, then (after a scan of the
// counts) each chunk writes its kept cells from its start, a round of
// KEPT_THREADS consecutive cells at a time, ranked by warp ballots, so the
// output is in the cells' order. A cell is kept where it is at least
// `cutoff`, or, with `nonzero`, where it is not 0.
// KEPT_THREADS (256) and KEPT_PER_THREAD (16) come from
// msa_gpu/kernels/constants.py (msa_gpu.kernels.full_source).
#define KEPT_CHUNK (KEPT_THREADS * KEPT_PER_THREAD)
#define KEPT_WARPS (KEPT_THREADS / 32)

__device__ __forceinline__ bool kept_cell(double v, double cutoff, int nonzero)
{
    return nonzero ? v != 0.0 : v >= cutoff;
}

extern "C" __global__ void __launch_bounds__(KEPT_THREADS) kept_count(
    const double* __restrict__ v, long long n, double cutoff, int nonzero, int* __restrict__ counts)
{
    __shared__ int warp_sum[KEPT_WARPS];
    const long long base = (long long)blockIdx.x * KEPT_CHUNK;
    int c = 0;
    for (int i = threadIdx.x; i < KEPT_CHUNK; i += KEPT_THREADS) {
        const long long g = base + i;
        if (g < n && kept_cell(v[g], cutoff, nonzero)) ++c;
    }
    for (int o = 16; o > 0; o >>= 1) c += __shfl_xor_sync(0xffffffffu, c, o);
    if ((threadIdx.x & 31) == 0) warp_sum[threadIdx.x >> 5] = c;
    __syncthreads();
    if (threadIdx.x == 0) {
        int total = 0;
        for (int w = 0; w < KEPT_WARPS; ++w) total += warp_sum[w];
        counts[blockIdx.x] = total;
    }
}

// Matrix m holds cells off[m] .. off[m + 1] - 1, `cols[m]` to a row, id
// ids[m]; `start` is each chunk's first output slot.
extern "C" __global__ void __launch_bounds__(KEPT_THREADS) kept_write(
    const double* __restrict__ v, long long n, double cutoff, int nonzero, const long long* __restrict__ start,
    const long long* __restrict__ off, int n_mat, const long long* __restrict__ cols, const long long* __restrict__ ids,
    long long* __restrict__ out_id, long long* __restrict__ out_x, long long* __restrict__ out_y,
    float* __restrict__ out_v)
{
    __shared__ int warp_count[KEPT_WARPS];
    const long long base = (long long)blockIdx.x * KEPT_CHUNK;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    long long next = start[blockIdx.x];
    for (int r = 0; r < KEPT_PER_THREAD; ++r) {
        const long long g = base + (long long)r * KEPT_THREADS + threadIdx.x;
        double val = 0.0;
        bool k = false;
        if (g < n) {
            val = v[g];
            k = kept_cell(val, cutoff, nonzero);
        }
        const unsigned ballot = __ballot_sync(0xffffffffu, k);
        if (lane == 0) warp_count[warp] = __popc(ballot);
        __syncthreads();
        int before = 0, total = 0;
        for (int w = 0; w < KEPT_WARPS; ++w) {
            const int c = warp_count[w];
            before += w < warp ? c : 0;
            total += c;
        }
        if (k) {
            const long long o = next + before + __popc(ballot & ((1u << lane) - 1u));
            int lo = 0, hi = n_mat;  // off[lo] <= g < off[lo + 1]
            while (hi - lo > 1) {
                const int mid = (lo + hi) >> 1;
                if (off[mid] <= g) lo = mid; else hi = mid;
            }
            const long long local = g - off[lo];
            out_id[o] = ids[lo];
            out_x[o] = local / cols[lo];
            out_y[o] = local % cols[lo];
            out_v[o] = (float)val;
        }
        next += total;
        __syncthreads();
    }
}
