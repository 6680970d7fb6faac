// Consistency kernels of accurate mode (msa_gpu/consistency/library.py): the
// library's extension through third sequences, and its share of the
// column-pair scores of a batch of merges.
//
// Integer arithmetic and integer atomics only (sums do not depend on their
// order), so the numba twins in msa_gpu/backend/consistency_cpu.py give the
// same integers.

// Dense extension of the pairs k of a chunk (s = pairs[2k], t = pairs[2k+1]):
//   dense[dense_off[k] + x * L_t + y] += W(s,u) W(u,t)
// for every u whose residue z faces residue x of s (pair_map row of (s, x))
// and whose row (u, z) gives y for t. One thread per (pair, x, u); pair_map
// rows are n wide, weights n x n.
extern "C" __global__ void library_extend(
    const int* __restrict__ pairs, const long long* __restrict__ dense_off, const int n_pairs,
    const long long* __restrict__ work_off, const int* __restrict__ pair_map, const int* __restrict__ weights,
    const long long* __restrict__ len, const long long* __restrict__ res_off, const int n,
    int* __restrict__ dense)
{
    const long long total = work_off[n_pairs];
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {
        int lo = 0, hi = n_pairs;  // work_off[lo] <= e < work_off[hi]
        while (hi - lo > 1) {
            const int mid = (lo + hi) >> 1;
            if (work_off[mid] <= e) lo = mid; else hi = mid;
        }
        const int s = pairs[2 * lo], t = pairs[2 * lo + 1];
        const long long local = e - work_off[lo];
        const int x = (int)(local / n), u = (int)(local % n);
        const int z = pair_map[(res_off[s] + x) * n + u];
        const int wsu = weights[s * n + u], wut = weights[u * n + t];
        if (z < 0 || wsu == 0 || wut == 0) continue;
        const int y = pair_map[(res_off[u] + z) * n + t];
        if (y < 0) continue;
        atomicAdd(dense + dense_off[lo] + (long long)x * len[t] + y, wsu * wut);
    }
}

// Per profile q (one block), per row r: the column of every residue, laid
// out like the codes (k x L at code_off[q]; a row's first n_residues slots).
extern "C" __global__ void residue_columns(
    const unsigned char* __restrict__ codes, const long long* __restrict__ code_off,
    const int* __restrict__ k, const int* __restrict__ L, const int* __restrict__ gap, int* __restrict__ col)
{
    const int q = blockIdx.x;
    const int Lq = L[q], g = gap[q];
    for (int r = threadIdx.x; r < k[q]; r += blockDim.x) {
        const long long base = code_off[q] + (long long)r * Lq;
        int x = 0;
        for (int c = 0; c < Lq; ++c)
            if (codes[base + c] != g) col[base + x++] = c;
    }
}

// lib[s_off[p] + a * L_B + b] += w_s w_t w for every library entry (x, y, w)
// of rows s of A and t of B, where a holds residue x of s and b residue y of
// t. One thread per (library pair, A row, B row); lp lists the batch's pairs
// with a library, cell_off their row pairs' offsets (k_A k_B each).
extern "C" __global__ void consistency_add(
    const int* __restrict__ lp, const long long* __restrict__ cell_off, const int n_lp,
    const long long* __restrict__ code_off, const int* __restrict__ k, const int* __restrict__ L,
    const int* __restrict__ col, const long long* __restrict__ weights, const int* __restrict__ members,
    const long long* __restrict__ w_off,
    const long long* __restrict__ pair_off, const int* __restrict__ ex, const int* __restrict__ ey,
    const int* __restrict__ ew, const int* __restrict__ g_n, const int* __restrict__ g_base,
    const long long* __restrict__ g_pair, const long long* __restrict__ s_off, unsigned long long* __restrict__ lib)
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
        const int kb = k[qb], la = L[qa], lb = L[qb];
        const long long local = e - cell_off[lo];
        const int sa = (int)(local / kb), tb = (int)(local % kb);
        const int gs = members[w_off[qa] + sa], gt = members[w_off[qb] + tb];
        const int n = g_n[gs], base = g_base[gs];
        const int s = gs - base, t = gt - base;
        const bool flip = s > t;  // entries are stored for the pair (min, max)
        const int lo_s = flip ? t : s, hi_s = flip ? s : t;
        const long long pk = g_pair[gs] + (long long)lo_s * (2 * n - lo_s - 1) / 2 + (hi_s - lo_s - 1);
        const unsigned long long wst = (unsigned long long)(weights[w_off[qa] + sa] * weights[w_off[qb] + tb]);
        const int* ca = col + code_off[qa] + (long long)sa * la;
        const int* cb = col + code_off[qb] + (long long)tb * lb;
        unsigned long long* out = lib + s_off[p];
        for (long long i = pair_off[pk]; i < pair_off[pk + 1]; ++i) {
            const int x = flip ? ey[i] : ex[i], y = flip ? ex[i] : ey[i];
            atomicAdd(out + (long long)ca[x] * lb + cb[y], wst * (unsigned long long)ew[i]);
        }
    }
}

// S[s_off[p] + c] += ((lib / n) * CONS_STEPS / (W_A W_B)) * lam / (CONS_STEPS * one_sq)
// for the library pairs lp (grid y), n = the family's size; CONS_STEPS (16)
// comes from msa_gpu/kernels/constants.py (msa_gpu.kernels.full_source).
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
        const long long v = ((long long)lib[start + c] / n) * CONS_STEPS / denom;
        S[start + c] += (int)(v * lam / (CONS_STEPS * one_sq));
    }
}
