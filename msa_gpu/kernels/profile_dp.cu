// Batched Gotoh profile-profile alignment with traceback.
//
// One thread block aligns one pair, sweeping anti-diagonal wavefronts; all
// scores are int32 fixed point so the result equals the CPU twin
// (msa_gpu/backend/cpu.py) bit for bit, ties included.
//
// Per pair p (A has m columns, rows i; B has n columns, cols j):
//   S      int32[m*n] at s_off[p]         column-pair scores
//   rowp   int32[(m+1)*4] at row_off[p]   [openH(i), extV_inner(i), extV_term(i), resA(i)]
//   colp   int32[(n+1)*4] at col_off[p]   [openV(j), extH_inner(j), extH_term(j), resB(j)]
//   dirs   uint8[(m+1)*(n+1)] at dir_off[p]
//   path   uint8[m+n] at path_off[p]      moves, written from the end backwards
// Recurrences (no close cost; E consumes A, F consumes B):
//   E[i][j] = max(H[i-1][j] - openV[j] * resA[i] / 1024, E[i-1][j]) - extV(i, j)
//   F[i][j] = max(H[i][j-1] - openH[i] * resB[j] / 1024, F[i][j-1]) - extH(i, j)
// (resA, resB: residue fractions of the column a run starts on, 1024 = all)
//   H[i][j] = max(H[i-1][j-1] + S[i-1][j-1], E[i][j], F[i][j])
// extV uses the terminal value on j == 0 or j == n, extH on i == 0 or i == m.
// dirs bits 0-1: H source (0 diag, 1 E, 2 F); bit 2: E opened; bit 3: F opened.
// Ties: diag before E before F; opening before extending.

#define NEG_INF (-1000000000)

extern "C" __global__ void profile_dp(
    const int* __restrict__ S, const long long* __restrict__ s_off,
    const int* __restrict__ rowp, const long long* __restrict__ row_off,
    const int* __restrict__ colp, const long long* __restrict__ col_off,
    const int* __restrict__ dims,
    unsigned char* __restrict__ dirs, const long long* __restrict__ dir_off,
    int* __restrict__ scratch,
    unsigned char* __restrict__ path, const long long* __restrict__ path_off,
    int* __restrict__ path_len, int* __restrict__ score)
{
    const int p = blockIdx.x;
    const int m = dims[2 * p], n = dims[2 * p + 1];
    const int* Sp = S + s_off[p];
    const int* rp = rowp + 4 * row_off[p];
    const int* cp = colp + 4 * col_off[p];
    unsigned char* D = dirs + dir_off[p];
    // scratch: H diagonals (3 x (m+1)), E (2 x (m+1)), F (2 x (m+1))
    int* base = scratch + 7 * row_off[p];
    const int W = m + 1;

    for (int d = 0; d <= m + n; ++d) {
        int* Hc = base + (d % 3) * W;
        const int* Hp = base + ((d + 2) % 3) * W;   // d-1
        const int* Hpp = base + ((d + 1) % 3) * W;  // d-2
        int* Ec = base + 3 * W + (d & 1) * W;
        const int* Ep = base + 3 * W + ((d + 1) & 1) * W;
        int* Fc = base + 5 * W + (d & 1) * W;
        const int* Fp = base + 5 * W + ((d + 1) & 1) * W;
        const int lo = d > n ? d - n : 0;
        const int hi = d < m ? d : m;
        for (int i = lo + threadIdx.x; i <= hi; i += blockDim.x) {
            const int j = d - i;
            int e = NEG_INF, f = NEG_INF, h;
            unsigned char bits = 0;
            if (i > 0) {
                const int ext = (j == 0 || j == n) ? rp[4 * i + 2] : rp[4 * i + 1];
                const int opened = Hp[i - 1] - (cp[4 * j] * rp[4 * i + 3]) / 1024;
                const int extended = Ep[i - 1];
                if (opened >= extended) { e = opened - ext; bits |= 4; }
                else { e = extended - ext; }
            }
            if (j > 0) {
                const int ext = (i == 0 || i == m) ? cp[4 * j + 2] : cp[4 * j + 1];
                const int opened = Hp[i] - (rp[4 * i] * cp[4 * j + 3]) / 1024;
                const int extended = Fp[i];
                if (opened >= extended) { f = opened - ext; bits |= 8; }
                else { f = extended - ext; }
            }
            if (i > 0 && j > 0) {
                h = Hpp[i - 1] + Sp[(long long)(i - 1) * n + (j - 1)];
                if (e > h) { h = e; bits |= 1; }
                if (f > h) { h = f; bits = (bits & 12) | 2; }
            } else if (i > 0) {
                h = e; bits |= 1;
            } else if (j > 0) {
                h = f; bits |= 2;
            } else {
                h = 0;
            }
            Hc[i] = h; Ec[i] = e; Fc[i] = f;
            D[(long long)i * (n + 1) + j] = bits;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        score[p] = base[((m + n) % 3) * W + m];
        unsigned char* out = path + path_off[p];
        int i = m, j = n, state = 0, len = 0;  // state 0 = H, 1 = E, 2 = F
        while (i > 0 || j > 0) {
            const unsigned char bits = D[(long long)i * (n + 1) + j];
            if (state == 0) state = bits & 3;
            if (state == 0) { out[len++] = 0; --i; --j; }
            else if (state == 1) { out[len++] = 1; state = (bits & 4) ? 0 : 1; --i; }
            else { out[len++] = 2; state = (bits & 8) ? 0 : 2; --j; }
        }
        path_len[p] = len;
    }
}
