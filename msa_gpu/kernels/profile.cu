// Profile kernels of stage 3, one module: level-wide statistics, column
// scores, the profile-profile DP (with traceback) and merges.
//
// All arithmetic is integer, so the numba twins in msa_gpu/backend/cpu.py
// give the same results bit for bit, ties included.

// Constants shared with the twins come from msa_gpu/kernels/constants.py, as
// #define lines before this file (msa_gpu.kernels.full_source): NEG_INF, VEC
// (residue slots per column), FRAC (fixed-point one for fractions), the gap
// model codes GAP_COUNTS and GAP_EXACT (below them: flat), DIAG_INTS,
// CKPT_INTS, STAT_COLS, STAT_LANES and MERGE_CHUNK.

// a / d (d > 0) in fixed point: floored, or rounded to the nearest (halves
// up) where rnd (1: the exact gap model, whose objective is the sum of pairs;
// floors there make every gap column a little cheaper and favour wider
// alignments).
__device__ __forceinline__ long long fixed_div(long long a, long long d, int rnd)
{
    if (rnd) a += d / 2;
    long long q = a / d;
    if ((a % d != 0) && (a < 0)) q -= 1;  // floor division
    return q;
}

// Column score of A column i against B column j (ra, rb: per column the
// residue fraction r and the gap charge g, x FRAC, of profile_stats):
//   sum_x vecA[i][x] * vecB[j][x] / (W_A * W_B) - (rA gB + rB gA) / FRAC^2, each term by fixed_div
__device__ __forceinline__ int col_score(const long long* va, const long long* vb, const int* ra,
                                         const int* rb, int i, int j, long long denom, int rnd)
{
    long long num = 0;
    for (int x = 0; x < VEC; ++x) num += va[(long long)i * VEC + x] * vb[(long long)j * VEC + x];
    long long s = fixed_div(num, denom, rnd);
    s -= fixed_div((long long)ra[2 * i] * rb[2 * j + 1] + (long long)rb[2 * j] * ra[2 * i + 1], FRAC * FRAC, rnd);
    return (int)s;
}

// A new gap column's extension: the consumed column's residue fraction res
// times the other side's extension cost at that boundary (x FRAC).
__device__ __forceinline__ int gap_ext(long long res, long long ext, int rnd)
{
    return (int)fixed_div(res * ext, FRAC * FRAC, rnd);
}

// One DP cell (see profile_dp). up = (i-1, j), left = (i, j-1), diag = (i-1, j-1)
// (its D, E and F states); s is the column score of (i-1, j-1), used when i > 0 and j > 0.
__device__ __forceinline__ void dp_cell(int i, int j, int m, int n, const int* rp, const int* cp,
                                        int h_up, int e_up, int h_left, int f_left, int d_diag, int e_diag,
                                        int f_diag, int s, int rnd, int& h, int& d, int& e, int& f,
                                        unsigned char& bits)
{
    e = NEG_INF; f = NEG_INF; d = NEG_INF; bits = 0;
    if (i > 0) {
        const int ext = gap_ext(rp[4 * i + 3], cp[4 * j + 1], rnd);
        const int opened = h_up - (int)fixed_div((long long)cp[4 * j] * rp[4 * i + 3], FRAC, rnd);
        if (opened >= e_up) { e = opened - ext; bits |= 4; }
        else { e = e_up - ext; }
    }
    if (j > 0) {
        const int ext = gap_ext(cp[4 * j + 3], rp[4 * i + 1], rnd);
        const int opened = h_left - (int)fixed_div((long long)rp[4 * i] * cp[4 * j + 3], FRAC, rnd);
        if (opened >= f_left) { f = opened - ext; bits |= 8; }
        else { f = f_left - ext; }
    }
    if (i > 0 && j > 0) {
        d = d_diag;
        const int from_e = e_diag + (int)fixed_div((long long)cp[4 * (j - 1) + 2] * rp[4 * i + 3], FRAC, rnd);
        const int from_f = f_diag + (int)fixed_div((long long)rp[4 * (i - 1) + 2] * cp[4 * j + 3], FRAC, rnd);
        if (from_e > d) { d = from_e; bits |= 16; }
        if (from_f > d) { d = from_f; bits = (bits & 15) | 32; }
        d += s;
        h = d;
        if (e > h) { h = e; bits |= 1; }
        if (f > h) { h = f; bits = (bits & 0xFC) | 2; }
    } else if (i > 0) {
        h = e; bits |= 1;
    } else if (j > 0) {
        h = f; bits |= 2;
    } else {
        h = 0; d = 0;
    }
}

// Traceback step from (i, j) in state st (0 H: the cell's best, 1 E, 2 F, 3 D); returns the move.
__device__ __forceinline__ unsigned char trace_step(unsigned char bits, int& i, int& j, int& st)
{
    if (st == 0) { st = bits & 3; if (st == 0) st = 3; }
    if (st == 3) { const int pred = (bits >> 4) & 3; st = pred == 0 ? 3 : pred; --i; --j; return 0; }
    if (st == 1) { st = (bits & 4) ? 0 : 1; --i; return 1; }
    st = (bits & 8) ? 0 : 2; --j; return 2;
}

// A pair's scratch holds H for two anti-diagonals and E, F, D for three, each
// m + 1 ints indexed by row (DIAG_INTS rows of them, kernels/constants.py): the ones anti-diagonal d uses.
struct Diag {
    int* Hc; const int* Hp; int* Ec; const int* Ep; const int* Epp; int* Fc; const int* Fp; const int* Fpp;
    int* Dc; const int* Dp; const int* Dpp;
    __device__ Diag(int* base, int W, int d)
        : Hc(base + (d & 1) * W), Hp(base + ((d + 1) & 1) * W),
          Ec(base + 2 * W + (d % 3) * W), Ep(base + 2 * W + ((d + 2) % 3) * W), Epp(base + 2 * W + ((d + 1) % 3) * W),
          Fc(base + 5 * W + (d % 3) * W), Fp(base + 5 * W + ((d + 2) % 3) * W), Fpp(base + 5 * W + ((d + 1) % 3) * W),
          Dc(base + 8 * W + (d % 3) * W), Dp(base + 8 * W + ((d + 2) % 3) * W), Dpp(base + 8 * W + ((d + 1) % 3) * W) {}
};

// Sweep anti-diagonal d with the block's threads: score(i, j) is the column
// score of cell (i, j) (i, j >= 1), keep(i, j, bits) stores direction bits.
template <typename Score, typename Keep>
__device__ __forceinline__ void sweep_diagonal(int d, int m, int n, int rnd, const int* rp, const int* cp,
                                               int* base, Score score, Keep keep)
{
    const Diag g(base, m + 1, d);
    const int lo = d > n ? d - n : 0;
    const int hi = d < m ? d : m;
    for (int i = lo + threadIdx.x; i <= hi; i += blockDim.x) {
        const int j = d - i;
        int h, d, e, f;
        unsigned char bits;
        const bool inner = i > 0 && j > 0;
        dp_cell(i, j, m, n, rp, cp, i > 0 ? g.Hp[i - 1] : 0, i > 0 ? g.Ep[i - 1] : 0,
                j > 0 ? g.Hp[i] : 0, j > 0 ? g.Fp[i] : 0, inner ? g.Dpp[i - 1] : 0, inner ? g.Epp[i - 1] : 0,
                inner ? g.Fpp[i - 1] : 0, inner ? score(i, j) : 0, rnd, h, d, e, f, bits);
        g.Hc[i] = h; g.Ec[i] = e; g.Fc[i] = f; g.Dc[i] = d;
        keep(i, j, bits);
    }
}

// ---------------------------------------------------------------- profile DP
// Batched Gotoh profile-profile alignment with traceback: one thread block
// per pair, anti-diagonal wavefronts, 4 direction bits per cell.
// Per pair p (A has m columns, rows i; B has n columns, cols j):
//   S      int32[m*n] at s_off[p]         column-pair scores
//   rowp   int32[(m+1)*4] at row_off[p]   [openH(i), extH(i), 0, resA(i)]
//   colp   int32[(n+1)*4] at col_off[p]   [openV(j), extV(j), 0, resB(j)]
//   dirs   uint8[(m+1)*(n+1)] at dir_off[p]
//   path   uint8[m+n] at path_off[p]      moves, written from the end backwards
//   dims   int32[3] at 3p                 m, n, and rnd: 1 where the pair's fixed point rounds
//                                         to the nearest (the exact gap model; fixed_div)
// Recurrences (no close cost; E consumes A, F consumes B):
//   E[i][j] = max(H[i-1][j] - openV[j] * resA[i] / 1024, E[i-1][j]) - resA[i] * extV[j] / 1024^2
//   F[i][j] = max(H[i][j-1] - openH[i] * resB[j] / 1024, F[i][j-1]) - resB[j] * extH[i] / 1024^2
// (resA, resB: residue fractions of the column consumed, 1024 = all; extV[j],
// extH[i]: the other side's extension cost at that boundary, x 1024)
//   D[i][j] = S[i-1][j-1] + max(D[i-1][j-1], E[i-1][j-1] + creditV[j-1] * resA[i] / 1024,
//                                F[i-1][j-1] + creditH[i-1] * resB[j] / 1024)
//   H[i][j] = max(D[i][j], E[i][j], F[i][j])
// (creditV[j], creditH[i]: the opens a gap run at that boundary took over from
// gaps that start in the next column, column 2 of colp / rowp; 0 but in the
// exact gap model, where H[i-1][j-1] + S is D.)
// dirs bits 0-1: H source (0 D, 1 E, 2 F); bit 2: E opened; bit 3: F opened;
// bits 4-5: D's source (0 D, 1 E, 2 F).
// Ties: D before E before F; opening before extending.
// Pairs with no direction storage (dir_off[p+1] == dir_off[p]) are long pairs,
// left to long_dp.
extern "C" __global__ void profile_dp(
    const int* __restrict__ S, const long long* __restrict__ s_off,
    const int* __restrict__ rowp, const long long* __restrict__ row_off,
    const int* __restrict__ colp, const long long* __restrict__ col_off,
    const int* __restrict__ dims,
    unsigned char* __restrict__ dirs, const long long* __restrict__ dir_off,
    int* __restrict__ scratch, const int smem_ints,
    unsigned char* __restrict__ path, const long long* __restrict__ path_off,
    int* __restrict__ path_len, int* __restrict__ score)
{
    const int p = blockIdx.x;
    if (dir_off[p + 1] == dir_off[p]) return;
    const int m = dims[3 * p], n = dims[3 * p + 1], rnd = dims[3 * p + 2];
    const int* Sp = S + s_off[p];
    const int* rp = rowp + 4 * row_off[p];
    const int* cp = colp + 4 * col_off[p];
    unsigned char* D = dirs + dir_off[p];
    // wavefront state: H for 3 anti-diagonals, E and F for 2, m + 1 ints each;
    // in shared memory when it fits the launch's allocation, else in scratch
    extern __shared__ int smem[];
    const int W = m + 1;
    int* base = DIAG_INTS * W <= smem_ints ? smem : scratch + DIAG_INTS * row_off[p];
    for (int d = 0; d <= m + n; ++d) {
        sweep_diagonal(d, m, n, rnd, rp, cp, base,
                       [&](int i, int j) { return Sp[(long long)(i - 1) * n + (j - 1)]; },
                       [&](int i, int j, unsigned char bits) { D[(long long)i * (n + 1) + j] = bits; });
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        score[p] = base[((m + n) & 1) * W + m];
        unsigned char* out = path + path_off[p];
        int i = m, j = n, st = 0, len = 0;
        while (i > 0 || j > 0) out[len++] = trace_step(D[(long long)i * (n + 1) + j], i, j, st);
        path_len[p] = len;
    }
}

// ---------------------------------------------------------------- long DP
// The same DP for pairs too large for an m x n score matrix and direction
// array, run band by band (R anti-diagonals each) from a host loop:
// band_scores fills one band's column scores with the whole GPU, band_dp
// sweeps the band in one block. The forward pass saves the state before each
// band; the traceback pass walks the bands backwards, restoring that state,
// keeping only one band's direction bits. Memory per pair: CKPT_INTS (m+1) ints per
// band boundary, R (m+1) ints and bytes, DIAG_INTS (m+1) ints (both in kernels/constants.py).

// Sb[(d - d0) * (m+1) + i] = column score of cell (i, d - i), d0 <= d <= d1.
extern "C" __global__ void band_scores(
    const long long* __restrict__ vec, const int* __restrict__ resid,
    const long long* __restrict__ pcol_off, const long long* __restrict__ Wt,
    const int* __restrict__ dims,
    const int p, const int d0, const int d1, int* __restrict__ Sb)
{
    const int m = dims[3 * p], n = dims[3 * p + 1], rnd = dims[3 * p + 2];
    const int qa = 2 * p, qb = 2 * p + 1;
    const long long* va = vec + pcol_off[qa] * VEC;
    const long long* vb = vec + pcol_off[qb] * VEC;
    const int* ra = resid + 2 * pcol_off[qa];
    const int* rb = resid + 2 * pcol_off[qb];
    const long long denom = Wt[qa] * Wt[qb];
    const long long W = m + 1, total = (long long)(d1 - d0 + 1) * W;
    for (long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x; c < total;
         c += (long long)gridDim.x * blockDim.x) {
        const int i = (int)(c % W), j = d0 + (int)(c / W) - i;
        if (i > 0 && j > 0 && j <= n) Sb[c] = col_score(va, vb, ra, rb, i - 1, j - 1, denom, rnd);
    }
}

// One band [d0, d1] of long pair p. Forward (trace == 0): save the state
// before the band, sweep it; the last band writes the score. Traceback
// (trace == 1): restore the state, sweep the band keeping direction bits,
// then thread 0 follows the path through the band (position in tr[0..3]).
extern "C" __global__ void band_dp(
    const int* __restrict__ rowp, const long long* __restrict__ row_off,
    const int* __restrict__ colp, const long long* __restrict__ col_off,
    const int* __restrict__ dims, const int p, const int R, const int d0, const int d1,
    const int* __restrict__ Sb, int* __restrict__ base, int* __restrict__ ckpt,
    const int trace, unsigned char* __restrict__ bd, int* __restrict__ tr,
    unsigned char* __restrict__ path, const long long* __restrict__ path_off,
    int* __restrict__ path_len, int* __restrict__ score)
{
    const int m = dims[3 * p], n = dims[3 * p + 1], rnd = dims[3 * p + 2];
    const int* rp = rowp + 4 * row_off[p];
    const int* cp = colp + 4 * col_off[p];
    const int W = m + 1, last = m + n;
    if (d0 > 0) {  // state before the band: H[d0-1], and E, F, D at d0-1 and d0-2
        int* slot = ckpt + (long long)(d0 / R - 1) * CKPT_INTS * W;
        const Diag g(base, W, d0 - 1);
        int* bufs[CKPT_INTS] = {g.Hc, g.Ec, const_cast<int*>(g.Ep), g.Fc, const_cast<int*>(g.Fp), g.Dc,
                                const_cast<int*>(g.Dp)};
        for (int t = 0; t < CKPT_INTS; ++t)
            for (int i = threadIdx.x; i < W; i += blockDim.x) {
                if (trace) bufs[t][i] = slot[(long long)t * W + i];
                else slot[(long long)t * W + i] = bufs[t][i];
            }
        __syncthreads();
    }
    for (int d = d0; d <= d1; ++d) {
        const int* Sd = Sb + (long long)(d - d0) * W;
        unsigned char* Bd = bd + (long long)(d - d0) * W;
        sweep_diagonal(d, m, n, rnd, rp, cp, base, [&](int i, int) { return Sd[i]; },
                       [&](int i, int, unsigned char bits) { if (trace) Bd[i] = bits; });
        __syncthreads();
    }
    if (threadIdx.x != 0) return;
    if (!trace) {
        if (d1 == last) *score = base[(last & 1) * W + m];
        return;
    }
    unsigned char* out = path + path_off[p];
    int i = tr[0], j = tr[1], st = tr[2], len = tr[3];
    while ((i > 0 || j > 0) && i + j >= d0)
        out[len++] = trace_step(bd[(long long)(i + j - d0) * W + i], i, j, st);
    tr[0] = i; tr[1] = j; tr[2] = st; tr[3] = len;
    if (d0 == 0) path_len[p] = len;
}

// ---------------------------------------------------------------- level-wide profile kernels
// A level has P pairs; profile q = 2p is pair p's A side, q = 2p + 1 its B side.
// Profile q: k[q] members x L[q] columns of uint8 codes at code_off[q]
// (row-major), member weights at w_off[q], total weight W[q], gap code gap[q].

// Per profile q, column c (< L) and boundary b = c (0..L):
//   vec[col_off[q] + c][x]  = weighted count of residue x (A side), or
//                             sum_y M[x][y] * count(y) (B side, M = mats[mat[q]])
//   resid[col_off[q] + c]   = [residue weight fraction r (0..FRAC), gap charge g]
//   rowp[bnd_off[q] + b]    = [open, ext, 0, r(b-1)]
// open = go * both(b) / FRAC, both(b) = fraction with residues on both sides of
// boundary b (ends: the end column's r, scaled by tgo / FRAC).
// gap_model 0 (flat): g = (FRAC - r) * gap_pair, ext = ge * FRAC inside and
// ge * tge at the ends. gap_model 1 (counts): g and ext are weighted means
// over the sequences, x FRAC: g of each sequence's gap in column c
// (gap_charge), ext of a new gap column at boundary b (boundary_ext).
// Block b of a tiled launch: the item q with tile_off[q] <= b < tile_off[q + 1]
// (tile_off: exclusive prefix sums of each item's blocks, n + 1 entries).
__device__ __forceinline__ int tile_owner(const long long* __restrict__ tile_off, int n, long long b)
{
    int lo = 0, hi = n;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (tile_off[mid] <= b) lo = mid; else hi = mid;
    }
    return lo;
}

// First and last residue column of every row of every profile of a level
// (rows of profile q at w_off[q]; a row of gaps only: L and -1), a thread a row.
extern "C" __global__ void row_span(
    const unsigned char* __restrict__ codes, const long long* __restrict__ code_off,
    const int* __restrict__ L, const long long* __restrict__ w_off, const int* __restrict__ gap,
    int n_prof, long long n_rows, int* __restrict__ first, int* __restrict__ last)
{
    for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r < n_rows;
         r += (long long)gridDim.x * blockDim.x) {
        const int q = tile_owner(w_off, n_prof, r);
        const int Lq = L[q], g = gap[q];
        const unsigned char* row = codes + code_off[q] + (r - w_off[q]) * Lq;
        int f = Lq, l = -1;
        for (int c = 0; c < Lq; ++c) {
            if (row[c] != g) { if (f == Lq) f = c; l = c; }
        }
        first[r] = f; last[r] = l;
    }
}

// A new gap column's extension cost (x FRAC) for a sequence at boundary c:
// terminal where it has no residue on one side.
__device__ __forceinline__ long long boundary_ext(int c, int first, int last, long long ge, long long tge)
{
    return (first >= c || last < c) ? ge * tge : ge * FRAC;
}

// What a sequence's existing gap at column c costs a residue facing it (x FRAC):
// open and extension where the gap starts there, the extension where it
// continues; the terminal costs where the sequence has no residue before or
// after c.
__device__ __forceinline__ long long gap_charge(int c, bool prev, int first, int last, long long go,
                                                long long ge, long long tgo, long long tge)
{
    const bool opening = c == 0 || prev;
    if (first > c || last < c) return opening ? go * tgo + ge * tge : ge * tge;
    return opening ? (go + ge) * FRAC : ge * FRAC;
}

// STAT_COLS (kernels/constants.py): boundary columns per profile_stats block;
// STAT_LANES: row lanes per column, blockDim.x = STAT_COLS * STAT_LANES
#define STAT_SUMS (VEC + 7)

// Statistics of every profile of a level. A block takes STAT_COLS boundary
// columns (c = 0..L) of one profile (tile_off: ceil((L + 1) / STAT_COLS)
// blocks per profile), and its STAT_LANES lanes split the rows, so a
// profile of many sequences is spread over many blocks and lanes; the
// lanes' integer sums are added in a fixed order. first/last: row_span's.
extern "C" __global__ void profile_stats(
    const unsigned char* __restrict__ codes, const long long* __restrict__ code_off,
    const int* __restrict__ k, const int* __restrict__ L,
    const long long* __restrict__ weights, const long long* __restrict__ w_off,
    const long long* __restrict__ W, const int* __restrict__ gap,
    const int* __restrict__ gaps,  // per profile: go, ge, tgo, tge
    const int* __restrict__ gap_model, const int* __restrict__ gap_pair,
    const int* __restrict__ mat, const long long* __restrict__ mats,
    const long long* __restrict__ col_off, const long long* __restrict__ bnd_off,
    const long long* __restrict__ tile_off, int n_prof,
    const int* __restrict__ first, const int* __restrict__ last,
    long long* __restrict__ vec, int* __restrict__ resid, int* __restrict__ rowp)
{
    __shared__ long long part[STAT_COLS][STAT_SUMS];
    const int q = tile_owner(tile_off, n_prof, blockIdx.x);
    const int kq = k[q], Lq = L[q], g = gap[q];
    const int col = threadIdx.x % STAT_COLS, lane = threadIdx.x / STAT_COLS;
    const int c = (int)(blockIdx.x - tile_off[q]) * STAT_COLS + col;
    const unsigned char* cq = codes + code_off[q];
    const long long* wq = weights + w_off[q];
    const int* fq = first + w_off[q];
    const int* lq = last + w_off[q];
    const long long go = gaps[4 * q], ge = gaps[4 * q + 1], tgo = gaps[4 * q + 2], tge = gaps[4 * q + 3];
    long long acc[STAT_SUMS];  // residue counts, then res_c, res_prev, both, ext, charge, opens, credit
    const bool exact = gap_model[q] == GAP_EXACT;
    for (int x = 0; x < STAT_SUMS; ++x) acc[x] = 0;
    if (c <= Lq) {
        for (int s = lane; s < kq; s += STAT_LANES) {
            const long long w = wq[s];
            const bool here = c < Lq && cq[(long long)s * Lq + c] != g;
            const bool prev = c > 0 && cq[(long long)s * Lq + c - 1] != g;
            if (here) { acc[cq[(long long)s * Lq + c]] += w; acc[VEC] += w; }
            if (prev) acc[VEC + 1] += w;
            if (here && prev) acc[VEC + 2] += w;
            acc[VEC + 3] += w * boundary_ext(c, fq[s], lq[s], ge, tge);
            if (c < Lq && !here) acc[VEC + 4] += w * gap_charge(c, prev, fq[s], lq[s], go, ge, tgo, tge);
            if (exact && (c == 0 || prev)) {  // a new gap column here opens this sequence's gap
                const long long cost = (fq[s] < c && lq[s] >= c) ? go * FRAC : go * tgo;
                acc[VEC + 5] += w * cost;
                if (c < Lq && !here) acc[VEC + 6] += w * cost;  // then continued in column c: credited back
            }
        }
    }
    // lanes 1.. add their sums into lane 0's, one lane at a time
    for (int r = 1; r < STAT_LANES; ++r) {
        if (lane == r)
            for (int x = 0; x < STAT_SUMS; ++x) part[col][x] = acc[x];
        __syncthreads();
        if (lane == 0)
            for (int x = 0; x < STAT_SUMS; ++x) acc[x] += part[col][x];
        __syncthreads();
    }
    if (lane != 0 || c > Lq) return;
    const long long Wq = W[q];
    const bool counts = gap_model[q] >= GAP_COUNTS;
    const bool b_side = (q & 1) == 1;
    const long long* M = mats + (long long)mat[q] * VEC * VEC;
    const int rnd = exact ? 1 : 0;
    const long long fc = fixed_div(acc[VEC] * FRAC, Wq, rnd), fp = fixed_div(acc[VEC + 1] * FRAC, Wq, rnd);
    const long long both = acc[VEC + 2];
    if (c < Lq) {
        long long* out = vec + (col_off[q] + c) * VEC;
        if (b_side) {
            for (int x = 0; x < VEC; ++x) {
                long long t = 0;
                for (int y = 0; y < VEC; ++y) t += M[x * VEC + y] * acc[y];
                out[x] = t;
            }
        } else {
            for (int x = 0; x < VEC; ++x) out[x] = acc[x];
        }
        int* rc = resid + 2 * (col_off[q] + c);
        rc[0] = (int)fc;
        rc[1] = counts ? (int)fixed_div(acc[VEC + 4], Wq, rnd) : (int)((FRAC - fc) * gap_pair[q / 2]);
    }
    long long open;
    if (exact) open = fixed_div(acc[VEC + 5], Wq, rnd);
    else if (c == 0) open = go * fc * tgo / FRAC;
    else if (c == Lq) open = go * fp * tgo / FRAC;
    else open = go * (both * FRAC / Wq);
    int* r = rowp + (bnd_off[q] + c) * 4;
    r[0] = (int)fixed_div(open, FRAC, rnd);
    r[1] = counts ? (int)fixed_div(acc[VEC + 3], Wq, rnd) : (int)((c == 0 || c == Lq) ? ge * tge : ge * FRAC);
    r[2] = exact ? (int)fixed_div(acc[VEC + 6], Wq * FRAC, rnd) : 0;
    r[3] = c > 0 ? (int)fp : 0;
}

// S[i][j] = col_score(i, j) for every short pair (long pairs have no S).
extern "C" __global__ void column_scores(
    const long long* __restrict__ vec, const int* __restrict__ resid,
    const long long* __restrict__ col_off, const int* __restrict__ L,
    const long long* __restrict__ W, const int* __restrict__ gap_model,
    int* __restrict__ S, const long long* __restrict__ s_off)
{
    const int p = blockIdx.y;
    const int qa = 2 * p, qb = 2 * p + 1;
    const int n = L[qb];
    const long long cells = s_off[p + 1] - s_off[p];
    const long long denom = W[qa] * W[qb];
    const int rnd = gap_model[qa] == GAP_EXACT ? 1 : 0;
    const long long* va = vec + col_off[qa] * VEC;
    const long long* vb = vec + col_off[qb] * VEC;
    const int* ra = resid + 2 * col_off[qa];
    const int* rb = resid + 2 * col_off[qb];
    for (long long cell = (long long)blockIdx.x * blockDim.x + threadIdx.x; cell < cells;
         cell += (long long)gridDim.x * blockDim.x) {
        S[s_off[p] + cell] = col_score(va, vb, ra, rb, (int)(cell / n), (int)(cell % n), denom, rnd);
    }
}

// Merged profile of pair p: rows of A then rows of B, columns along the path
// (moves stored from the end backwards: 0 both, 1 A only, 2 B only).
// Each merge's column maps from its path: cols[2 path_off[p] + t] is the A
// column in merged column t (-1: a gap), then len entries for B. One thread
// a pair.
extern "C" __global__ void merge_columns(
    const unsigned char* __restrict__ path, const long long* __restrict__ path_off,
    const int* __restrict__ path_len, int* __restrict__ cols, int n_pairs)
{
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n_pairs) return;
    const int len = path_len[p];
    const unsigned char* pp = path + path_off[p];
    int* ca = cols + 2 * path_off[p];
    int* cb = ca + len;
    int ia = 0, ib = 0;
    for (int t = 0; t < len; ++t) {
        const unsigned char mv = pp[len - 1 - t];
        ca[t] = mv != 2 ? ia++ : -1;
        cb[t] = mv != 1 ? ib++ : -1;
    }
}

// MERGE_CHUNK (kernels/constants.py): merged codes per merge_profiles block

// The merged profiles' codes (A's rows, then B's), MERGE_CHUNK codes a
// block (tile_off: ceil((k_A + k_B) len / MERGE_CHUNK) blocks per pair).
extern "C" __global__ void merge_profiles(
    const unsigned char* __restrict__ codes, const long long* __restrict__ code_off,
    const int* __restrict__ k, const int* __restrict__ L, const int* __restrict__ gap,
    const long long* __restrict__ path_off, const int* __restrict__ path_len, const int* __restrict__ cols,
    const long long* __restrict__ tile_off, int n_pairs,
    unsigned char* __restrict__ out, const long long* __restrict__ out_off)
{
    const int p = tile_owner(tile_off, n_pairs, blockIdx.x);
    const int qa = 2 * p, qb = 2 * p + 1;
    const int len = path_len[p];
    const int* ca = cols + 2 * path_off[p];
    const int* cb = ca + len;
    const int ka = k[qa], la = L[qa], lb = L[qb];
    const unsigned char* A = codes + code_off[qa];
    const unsigned char* B = codes + code_off[qb];
    unsigned char* o = out + out_off[p];
    const long long total = out_off[p + 1] - out_off[p];
    const long long first = (blockIdx.x - tile_off[p]) * (long long)MERGE_CHUNK;
    const long long last = min(total, first + MERGE_CHUNK);
    for (long long e = first + threadIdx.x; e < last; e += blockDim.x) {
        const int s = (int)(e / len), t = (int)(e % len);
        unsigned char v;
        if (s < ka) v = ca[t] >= 0 ? A[(long long)s * la + ca[t]] : (unsigned char)gap[qa];
        else v = cb[t] >= 0 ? B[(long long)(s - ka) * lb + cb[t]] : (unsigned char)gap[qb];
        o[e] = v;
    }
}
