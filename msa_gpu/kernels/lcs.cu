// Bit-parallel longest common subsequence (Allison-Dix, Hyyro) of every pair
// of a family, whole rows (j != i; the diagonal is len_i): the lengths FAMSA's
// guide-tree distances come from.
// Twin: backend/lcs_cpu.py. Exact integers, so both give the same matrix.
//
// Row i's sequence is held as one bit mask per symbol (MASKS words each);
// one block takes one row, its threads the columns j. For each residue c of
// sequence j:  U = V & M[c];  V = (V + U) | (V & ~U)  (V - U never borrows,
// as U lies inside V). The LCS is the number of zero bits in V's first len_i.
#ifndef LCS_WORDS
#define LCS_WORDS 4
#endif

// LCS length of a sequence of `la` residues, held as its masks M, and the
// residues b[0..lb): the number of zero bits of V within its first la bits.
__device__ __forceinline__ int lcs_length(const unsigned long long* __restrict__ M, int la,
                                          const unsigned char* __restrict__ b, int lb)
{
    const int W = (la + 63) >> 6;
    const unsigned long long tail = (la & 63) ? ~((1ULL << (la & 63)) - 1ULL) : 0ULL;
    unsigned long long V[LCS_WORDS];
#pragma unroll
    for (int w = 0; w < LCS_WORDS; ++w) V[w] = ~0ULL;
    for (int k = 0; k < lb; ++k) {
        const unsigned long long* m = M + (long long)b[k] * W;
        unsigned long long carry = 0ULL;
#pragma unroll
        for (int w = 0; w < LCS_WORDS; ++w) {
            if (w < W) {
                const unsigned long long v = V[w];
                const unsigned long long u = v & m[w];
                const unsigned long long s = v + u;
                const unsigned long long s2 = s + carry;
                carry = (unsigned long long)((s < v) | (s2 < s));
                V[w] = s2 | (v & ~u);
            }
        }
    }
    int zeros = 0;
#pragma unroll
    for (int w = 0; w < LCS_WORDS; ++w) {
        if (w < W) {
            const unsigned long long x = (w == W - 1) ? (V[w] | tail) : V[w];
            zeros += 64 - __popcll(x);
        }
    }
    return zeros;
}

extern "C" __global__ void lcs_rows(
    const unsigned long long* __restrict__ masks, const long long* __restrict__ mask_off,
    const unsigned char* __restrict__ codes, const long long* __restrict__ code_off,
    const int* __restrict__ lens, const int* __restrict__ rows, int n_rows, int r0, int n,
    int* __restrict__ out)
{
    const int t = blockIdx.x;
    if (t >= n_rows) return;
    const int i = rows[t];
    const int li = lens[i];
    const unsigned long long* M = masks + mask_off[i];
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        if (j == i) {
            out[(long long)(i - r0) * n + j] = li;
            continue;
        }
        out[(long long)(i - r0) * n + j] = lcs_length(M, li, codes + code_off[j], lens[j]);
    }
}

// One step of Prim's minimum spanning tree over the LCS distances of every
// family of a batch, no matrix held (twin: lcs_cpu.prim_lcs_edges, one
// family at a time). Sequences are numbered across the batch; k belongs to
// family fam[k] of fam_n[f] sequences. Sequence j = cur[f] has just joined
// its family's tree; each k still outside takes d(j, k) as its distance to
// the tree where it is lower (strictly: the earlier source keeps a tie).
// d = powers[len_j + len_k - 2 lcs] / lcs (no_common where lcs = 0), the same
// table and IEEE division as distances/lcs.py. Thread k holds k's masks
// (LCS_WORDS the widest class of the batch) and walks j's residues: the LCS
// is symmetric, so the integer is the same either way.
extern "C" __global__ void lcs_prim_relax(
    const unsigned long long* __restrict__ masks, const long long* __restrict__ mask_off,
    const unsigned char* __restrict__ codes, const long long* __restrict__ code_off,
    const int* __restrict__ lens, const double* __restrict__ powers, double no_common,
    const int* __restrict__ fam, const int* __restrict__ fam_n, const long long* __restrict__ cur,
    const unsigned char* __restrict__ inside, double* __restrict__ best, long long* __restrict__ src,
    int n, int step)
{
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n || inside[k]) return;
    const int f = fam[k];
    if (step >= fam_n[f] - 1) return;
    const long long j = cur[f];
    const int lk = lens[k];
    const int lj = lens[j];
    const int l = lcs_length(masks + mask_off[k], lk, codes + code_off[j], lj);
    const double d = l > 0 ? __ddiv_rn(powers[lj + lk - 2 * l], (double)l) : no_common;
    if (d < best[k]) {
        best[k] = d;
        src[k] = j;
    }
}

// The next sequence to join family blockIdx.x's tree: the one outside it
// nearest to it, ties to the lowest index. It joins; the family's edge
// `step` is (src, it) in the family's own numbering, with its length, and
// cur[f] becomes it for the next relax.
extern "C" __global__ void lcs_prim_pick(
    const double* __restrict__ best, const long long* __restrict__ src,
    unsigned char* __restrict__ inside, long long* __restrict__ cur,
    const long long* __restrict__ fam_base, const int* __restrict__ fam_n,
    const long long* __restrict__ edge_base, long long* __restrict__ ends, double* __restrict__ length, int step)
{
    __shared__ double sv[1024];
    __shared__ long long si[1024];
    const int f = blockIdx.x;
    const int nf = fam_n[f];
    if (step >= nf - 1) return;
    const long long base = fam_base[f];
    double v = 0.0;
    long long arg = -1;
    for (long long k = base + threadIdx.x; k < base + nf; k += blockDim.x) {
        if (!inside[k] && (arg < 0 || best[k] < v)) {
            v = best[k];
            arg = k;
        }
    }
    sv[threadIdx.x] = v;
    si[threadIdx.x] = arg;
    __syncthreads();
    for (int s = blockDim.x >> 1; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            const long long a = si[threadIdx.x], b = si[threadIdx.x + s];
            if (b >= 0 && (a < 0 || sv[threadIdx.x + s] < sv[threadIdx.x]
                           || (sv[threadIdx.x + s] == sv[threadIdx.x] && b < a))) {
                sv[threadIdx.x] = sv[threadIdx.x + s];
                si[threadIdx.x] = b;
            }
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        const long long j = si[0];
        const long long e = edge_base[f] + step;
        inside[j] = 1;
        cur[f] = j;
        ends[2 * e] = src[j] - base;
        ends[2 * e + 1] = j - base;
        length[e] = sv[0];
    }
}
