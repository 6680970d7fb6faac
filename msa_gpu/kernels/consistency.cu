// Consistency scores of accurate mode (msa_gpu/consistency.py): the library's
// share of each column-pair score of a level's merges.
//
// Integer arithmetic and integer atomics only (sums do not depend on their
// order), so the numba twins in msa_gpu/backend/consistency_cpu.py give the
// same integers.

// Per profile q (one block), per row r: the residue index of every column
// (rank, -1 on gaps) and the column of every residue (col), both laid out like
// the codes (k x L at code_off[q]; col uses the first n_residues of a row).
extern "C" __global__ void residue_index(
    const unsigned char* __restrict__ codes, const long long* __restrict__ code_off,
    const int* __restrict__ k, const int* __restrict__ L, const int* __restrict__ gap,
    int* __restrict__ rank, int* __restrict__ col)
{
    const int q = blockIdx.x;
    const int Lq = L[q], g = gap[q];
    for (int r = threadIdx.x; r < k[q]; r += blockDim.x) {
        const long long base = code_off[q] + (long long)r * Lq;
        int x = 0;
        for (int c = 0; c < Lq; ++c) {
            if (codes[base + c] != g) { rank[base + c] = x; col[base + x] = c; ++x; }
            else rank[base + c] = -1;
        }
    }
}

// lib[s_off[p] + a * L_B + b] += w_s w_t W(s,u) W(u,t) for every residue x of
// row s in A's column a, every family member u whose residue z faces x, and
// every row t of B whose residue y faces z (in B's column b). One thread per
// (library pair, A row, A column); lp lists the level's pairs with a library,
// cell_off their A cells' offsets (k_A L_A each).
extern "C" __global__ void consistency_add(
    const int* __restrict__ lp, const long long* __restrict__ cell_off, const int n_lp,
    const long long* __restrict__ code_off, const int* __restrict__ k, const int* __restrict__ L,
    const int* __restrict__ rank, const int* __restrict__ col,
    const long long* __restrict__ weights, const int* __restrict__ members, const long long* __restrict__ w_off,
    const int* __restrict__ pair_map, const int* __restrict__ lw,
    const int* __restrict__ g_n, const int* __restrict__ g_base,
    const long long* __restrict__ g_map, const long long* __restrict__ g_w,
    const long long* __restrict__ s_off, unsigned long long* __restrict__ lib)
{
    const long long total = cell_off[n_lp];
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {
        int lo = 0, hi = n_lp;  // cell_off[lo] <= e < cell_off[hi]
        while (hi - lo > 1) {
            const int mid = (lo + hi) >> 1;
            if (cell_off[mid] <= e) lo = mid; else hi = mid;
        }
        const int p = lp[lo], qa = 2 * p, qb = 2 * p + 1;
        const long long local = e - cell_off[lo];
        const int la = L[qa], lb = L[qb], kb = k[qb];
        const int s = (int)(local / la), a = (int)(local % la);
        const int x = rank[code_off[qa] + local];
        if (x < 0) continue;
        const int gs = members[w_off[qa] + s];
        const int n = g_n[gs], base = g_base[gs];
        const long long ws = weights[w_off[qa] + s];
        const int* rowx = pair_map + g_map[gs] + (long long)x * n;
        const int* wsrow = lw + g_w[gs];
        unsigned long long* out = lib + s_off[p] + (long long)a * lb;
        for (int u = 0; u < n; ++u) {
            const int z = rowx[u];
            const long long wsu = wsrow[u];
            if (z < 0 || wsu == 0) continue;
            const int gu = base + u;
            const int* rowz = pair_map + g_map[gu] + (long long)z * n;
            const int* wurow = lw + g_w[gu];
            for (int tb = 0; tb < kb; ++tb) {
                const int t = members[w_off[qb] + tb] - base;
                const int y = rowz[t];
                const long long wut = wurow[t];
                if (y < 0 || wut == 0) continue;
                const int b = col[code_off[qb] + (long long)tb * lb + y];
                atomicAdd(out + b, (unsigned long long)(ws * weights[w_off[qb] + tb] * wsu * wut));
            }
        }
    }
}

// S[s_off[p] + c] += ((lib / n) * 16 / (W_A W_B)) * lam / (16 * LIBRARY_ONE^2)
// for the library pairs lp (grid y), n = the family's size.
extern "C" __global__ void consistency_fold(
    const int* __restrict__ lp, const int* __restrict__ lp_n, const long long* __restrict__ W,
    const long long* __restrict__ s_off, const unsigned long long* __restrict__ lib,
    const long long lam, const long long one_sq, int* __restrict__ S)
{
    const int p = lp[blockIdx.y];
    const long long n = lp_n[blockIdx.y];
    const long long denom = W[2 * p] * W[2 * p + 1];
    const long long start = s_off[p], cells = s_off[p + 1] - start;
    for (long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x; c < cells;
         c += (long long)gridDim.x * blockDim.x) {
        const long long v = ((long long)lib[start + c] / n) * 16 / denom;
        S[start + c] += (int)(v * lam / (16 * one_sq));
    }
}
