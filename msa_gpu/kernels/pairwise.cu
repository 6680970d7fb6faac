// Batched pairwise Gotoh alignment, one thread per pair (inter-task).
//
// The recurrences, tie rules, end-cell rule and direction nibbles are those
// of the CPU twin (msa_gpu/backend/pairwise_cpu.py), so scores, end cells and
// moves are identical. Defines: MODE (0 global, 1 semiglobal, 2 local),
// TRACEBACK (0/1), DPX (1: Hopper max instructions in the score-only path).
//
// The 32 pairs of a warp are run as one (Mw x Nw) problem, Mw (a multiple of
// R) and Nw (a multiple of 4) the warp's largest lengths: cells outside a
// thread's own (m x n) are computed but never used (no real cell depends on
// them), so every thread of the warp follows the same loop. Rows are swept in
// strips of R: H/F of the strip live in registers, the strip's bottom H/E row
// goes to a per-warp interleaved buffer (coalesced), and with TRACEBACK the R
// nibbles of one column form one 32-bit word, also interleaved per warp.
//
// seq: residue codes, each sequence starting at a multiple of 4, padded with
// PAD; pa/pb: sequence indices per slot (-1: empty slot).

#define NEG (-(1 << 29))
#define R 8
#define PAD 31

#ifndef DPX
#define DPX 0
#endif

__device__ __forceinline__ int addmax(int a, int b, int c) {  // max(a + b, c)
#if DPX && __CUDA_ARCH__ >= 900
    return __viaddmax_s32(a, b, c);
#else
    return max(a + b, c);
#endif
}

__device__ __forceinline__ int max3(int a, int b, int c) {
#if DPX && __CUDA_ARCH__ >= 900
    return __vimax3_s32(a, b, c);
#else
    return max(max(a, b), c);
#endif
}

extern "C" __global__ void pairwise_dp(
    const unsigned char* __restrict__ seq, const long long* __restrict__ seq_off,
    const int* __restrict__ seq_len,
    const int* __restrict__ pa, const int* __restrict__ pb,
    const int* __restrict__ warp_dims, const long long* __restrict__ row_off,
    int2* __restrict__ rowbuf, const long long* __restrict__ dir_off,
    unsigned int* __restrict__ dirs,
    const int* __restrict__ Sg, int ksize, int go, int ge, int nslots,
    long long* __restrict__ res,  // 8 per slot, as in the twin
    unsigned char* __restrict__ ops, const long long* __restrict__ ops_off)
{
    __shared__ int sS[32 * 32];
    for (int k = threadIdx.x; k < 32 * 32; k += blockDim.x) {
        const int x = k >> 5, y = k & 31;
        sS[k] = (x < ksize && y < ksize) ? Sg[x * ksize + y] : 0;
    }
    __syncthreads();
    const int slot = blockIdx.x * blockDim.x + threadIdx.x;
    if (slot >= nslots) return;  // nslots is a multiple of 32: whole warps leave
    const int warp = slot >> 5, lane = slot & 31;
    const int Mw = warp_dims[2 * warp], Nw = warp_dims[2 * warp + 1];
    const bool live = pa[slot] >= 0;
    const int sa = live ? pa[slot] : 0, sb = live ? pb[slot] : 0;
    const int m = live ? seq_len[sa] : 0, n = live ? seq_len[sb] : 0;
    const unsigned char* A = seq + seq_off[sa];
    const unsigned int* B4 = reinterpret_cast<const unsigned int*>(seq + seq_off[sb]);
    int2* rb = rowbuf + row_off[warp] + lane;
#if TRACEBACK
    unsigned int* dw = dirs + dir_off[warp] + lane;
#endif

    // best end cell (score, i, j); semiglobal starts with (0, n), local with (0, 0)
    int best = 0, bi = 0, bj = (MODE == 1) ? n : 0;
    int gscore = 0;

    for (int i0 = 0; i0 < Mw; i0 += R) {
        int arow[R], hl[R], f[R];
#if MODE != 0
        int rbest[R], rj[R], lastcol[R];
#endif
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int i = i0 + r + 1;
            arow[r] = (i <= m ? A[i - 1] : PAD) * 32;
            hl[r] = (MODE == 0) ? -(go + (i - 1) * ge) : 0;
            f[r] = NEG;
#if MODE != 0
            rbest[r] = 0; rj[r] = 0; lastcol[r] = 0;
#endif
        }
        int hdiag0 = (MODE == 0 && i0 > 0) ? -(go + (i0 - 1) * ge) : 0;  // H[i0][0]
        unsigned int bw = 0;
        for (int j = 1; j <= Nw; ++j) {
            if (((j - 1) & 3) == 0) bw = B4[(j - 1) >> 2];
            const int bj_code = (bw >> (8 * ((j - 1) & 3))) & 0xff;
            int hup, eup;
            if (i0 == 0) {
                hup = (MODE == 0) ? -(go + (j - 1) * ge) : 0;
                eup = NEG;
            } else {
                const int2 v = rb[(long long)(j - 1) * 32];
                hup = v.x; eup = v.y;
            }
            int diag = hdiag0;
            hdiag0 = hup;
#if TRACEBACK
            unsigned int word = 0;
#endif
#pragma unroll
            for (int r = 0; r < R; ++r) {
                const int s = sS[arow[r] + bj_code];
#if TRACEBACK
                const int eo = hup - go, ee = eup - ge;
                int bits, e, h;
                if (eo >= ee) { e = eo; bits = 4; } else { e = ee; bits = 0; }
                const int fo = hl[r] - go, fe = f[r] - ge;
                if (fo >= fe) { f[r] = fo; bits |= 8; } else { f[r] = fe; }
                h = diag + s;
                if (e > h) { h = e; bits |= 1; }
                if (f[r] > h) { h = f[r]; bits = (bits & 12) | 2; }
#if MODE == 2
                if (h <= 0) { h = 0; bits |= 3; }
#endif
                word |= (unsigned int)bits << (4 * r);
#else
                const int e = addmax(eup, -ge, hup - go);
                f[r] = addmax(f[r], -ge, hl[r] - go);
                int h = max3(diag + s, e, f[r]);
#if MODE == 2
                h = max(h, 0);
#endif
#endif
#if MODE != 0
                if (j <= n && h > rbest[r]) { rbest[r] = h; rj[r] = j; }
                if (j == n) lastcol[r] = h;
#else
                if (j == n && i0 + r + 1 == m) gscore = h;
#endif
                diag = hl[r];
                hl[r] = h;
                hup = h;
                eup = e;
            }
            rb[(long long)(j - 1) * 32] = make_int2(hup, eup);
#if TRACEBACK
            dw[((long long)(i0 / R) * Nw + (j - 1)) * 32] = word;
#endif
        }
#if MODE != 0
        // offer this strip's end-cell candidates in (i, j) order, strictly better only
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int i = i0 + r + 1;
#if MODE == 2
            if (i <= m && rbest[r] > best) { best = rbest[r]; bi = i; bj = rj[r]; }
#else
            if (i < m && lastcol[r] > best) { best = lastcol[r]; bi = i; bj = n; }
            if (i == m && rbest[r] > best) { best = rbest[r]; bi = i; bj = rj[r]; }
#endif
        }
#endif
    }
    if (!live) return;
#if MODE == 0
    best = gscore; bi = m; bj = n;
#endif
    long long* out = res + 8LL * slot;
    out[0] = best; out[1] = bi; out[2] = bj;
    out[3] = bi; out[4] = bj; out[5] = m + n; out[6] = 0; out[7] = 0;
#if TRACEBACK
    unsigned char* mv = ops + ops_off[slot];
    int pos = m + n, i = bi, j = bj, st = 0, ident = 0, npair = 0;
#if MODE == 1
    if (i == m) { for (int k = 0; k < n - j; ++k) mv[--pos] = 2; }
    else { for (int k = 0; k < m - i; ++k) mv[--pos] = 1; }
#endif
    const unsigned char* B = seq + seq_off[sb];
    while (i > 0 && j > 0) {
        const int bits = (dw[((long long)((i - 1) / R) * Nw + (j - 1)) * 32] >> (4 * ((i - 1) % R))) & 15;
        if (st == 0) {
            st = bits & 3;
            if (st == 3) break;
        }
        if (st == 0) {
            mv[--pos] = 0;
            ++npair;
            ident += (A[i - 1] == B[j - 1]);
            --i; --j;
        } else if (st == 1) {
            mv[--pos] = 1;
            if (bits & 4) st = 0;
            --i;
        } else {
            mv[--pos] = 2;
            if (bits & 8) st = 0;
            --j;
        }
    }
#if MODE != 2
    for (; i > 0; --i) mv[--pos] = 1;
    for (; j > 0; --j) mv[--pos] = 2;
#endif
    out[3] = i; out[4] = j; out[5] = pos; out[6] = ident; out[7] = npair;
#endif
}
