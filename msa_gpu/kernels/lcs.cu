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
    const int W = (li + 63) >> 6;
    const unsigned long long* M = masks + mask_off[i];
    const unsigned long long tail = (li & 63) ? ~((1ULL << (li & 63)) - 1ULL) : 0ULL;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        if (j == i) {
            out[(long long)(i - r0) * n + j] = li;
            continue;
        }
        unsigned long long V[LCS_WORDS];
#pragma unroll
        for (int w = 0; w < LCS_WORDS; ++w) V[w] = ~0ULL;
        const unsigned char* b = codes + code_off[j];
        const int lj = lens[j];
        for (int k = 0; k < lj; ++k) {
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
        out[(long long)(i - r0) * n + j] = zeros;
    }
}
