// Kept whole at ~400 lines: the packed layout, the cache blocking and the three kernels that read them are one concern (tests are in gemm_tests.rs).
//! Single-precision matrix products for the encoder.
//!
//! The right-hand side is packed once into column panels of [`NR`] floats
//! (weights at load time, attention keys/values per head), so the inner loop
//! reads it contiguously; the left-hand side is read in place with a row
//! stride, so attention can address one head of the fused QKV buffer without
//! copying. On x86-64 with AVX-512 a register-tiled kernel does the work
//! (`MR` rows x 64 columns of accumulators); with AVX2 and FMA one of
//! `MR` rows x 16 columns, run over each 16-column strip of a panel (16
//! registers hold no more); elsewhere a portable kernel of the same shape
//! as the first, which the compiler vectorises for the baseline target.

/// 16-lane vectors per row of a register tile.
const NV: usize = 4;
/// Columns per packed panel.
pub const NR: usize = 16 * NV;
/// Rows per register tile.
const MR: usize = 6;
/// Rows per cache block: the block of A stays in L2 while every panel of B
/// streams past it.
const MB: usize = 96;

/// `B` (`k x n`) packed as `ceil(n / NR)` panels of `k x NR`, zero-padded.
#[derive(Debug, Clone, Default)]
pub struct PackedMatrix {
    k: usize,
    n: usize,
    data: Vec<f32>,
}

impl PackedMatrix {
    pub fn k(&self) -> usize {
        self.k
    }

    pub fn n(&self) -> usize {
        self.n
    }

    fn panels(&self) -> usize {
        self.n.div_ceil(NR)
    }

    /// Sizes the panels for `k x n`. Not cleared (attention repacks every
    /// head, and a memset of the whole buffer each time showed in
    /// profiles): the packing functions write every real column and
    /// [`Self::zero_padding`] the rest.
    fn reset(&mut self, k: usize, n: usize) {
        self.k = k;
        self.n = n;
        self.data.resize(n.div_ceil(NR) * k * NR, 0.0);
        self.zero_padding();
    }

    /// Zeroes the columns of the last panel past `n`.
    fn zero_padding(&mut self) {
        let cols = self.n % NR;
        if cols == 0 || self.k == 0 {
            return;
        }
        let (k, last) = (self.k, self.panels() - 1);
        for row in self.data[last * k * NR..(last + 1) * k * NR].chunks_exact_mut(NR) {
            row[cols..].fill(0.0);
        }
    }

    /// Packs `B[kk][j] = get(kk, j)`.
    fn fill(&mut self, k: usize, n: usize, get: impl Fn(usize, usize) -> f32) {
        self.reset(k, n);
        for p in 0..self.panels() {
            let panel = &mut self.data[p * k * NR..(p + 1) * k * NR];
            let cols = (n - p * NR).min(NR);
            for kk in 0..k {
                for jj in 0..cols {
                    panel[kk * NR + jj] = get(kk, p * NR + jj);
                }
            }
        }
    }

    /// From a PyTorch `Linear` weight, `[out x in]` row-major: `B = W^T`.
    pub fn from_linear_weight(w: &[f32], out_features: usize, in_features: usize) -> Self {
        let mut m = PackedMatrix::default();
        m.fill(in_features, out_features, |kk, j| w[j * in_features + kk]);
        m
    }

    /// `B[kk][j] = src[kk * ld + j]` (rows of a row-major matrix).
    pub fn pack_rows(&mut self, src: &[f32], k: usize, n: usize, ld: usize) {
        self.reset(k, n);
        for p in 0..self.panels() {
            let cols = (n - p * NR).min(NR);
            let panel = &mut self.data[p * k * NR..(p + 1) * k * NR];
            for kk in 0..k {
                let from = kk * ld + p * NR;
                panel[kk * NR..kk * NR + cols].copy_from_slice(&src[from..from + cols]);
            }
        }
    }

    /// `B[kk][j] = src[j * ld + kk]` (the transpose of a row-major matrix).
    pub fn pack_transposed(&mut self, src: &[f32], k: usize, n: usize, ld: usize) {
        self.reset(k, n);
        for p in 0..self.panels() {
            let cols = (n - p * NR).min(NR);
            let panel = &mut self.data[p * k * NR..(p + 1) * k * NR];
            for jj in 0..cols {
                let row = &src[(p * NR + jj) * ld..(p * NR + jj) * ld + k];
                for (kk, v) in row.iter().enumerate() {
                    panel[kk * NR + jj] = *v;
                }
            }
        }
    }
}

/// Depth of one pass: a `KC x NR` slice of a B panel (32 KiB) stays in L1
/// while every row tile of the block streams past it.
const KC: usize = 256;

/// `C = A . B (+ bias)`: `A` is `m x k` with row stride `lda`, `C` is
/// `m x n` with row stride `ldc`; `bias` (length >= n) is added to every row.
///
/// Panics when a slice is too short for the given shape (a programming
/// error, never a data error: shapes come from the model config).
pub fn matmul(a: &[f32], lda: usize, m: usize, b: &PackedMatrix, c: &mut [f32], ldc: usize, bias: Option<&[f32]>) {
    let (k, n) = (b.k, b.n);
    if m == 0 || n == 0 {
        return;
    }
    assert!(lda >= k && ldc >= n, "strides shorter than rows");
    assert!(a.len() >= (m - 1) * lda + k, "A too short");
    assert!(c.len() >= (m - 1) * ldc + n, "C too short");
    if let Some(bias) = bias {
        assert!(bias.len() >= n, "bias too short");
    }
    let kernel = Kernel::detect();
    let mut packed_a: Vec<f32> = Vec::new();
    if k == 0 {
        // An empty sum: C is the bias (or zero).
        for i in 0..m {
            for j in 0..n {
                c[i * ldc + j] = bias.map_or(0.0, |b| b[j]);
            }
        }
        return;
    }
    for k0 in (0..k).step_by(KC) {
        let kc = (k - k0).min(KC);
        for m0 in (0..m).step_by(MB) {
            let m1 = (m0 + MB).min(m);
            // Packing pays off when many panels reuse the block; attention's
            // narrow products read A in place.
            let pack = b.panels() > 2;
            if pack {
                pack_a(&a[m0 * lda + k0..], lda, m1 - m0, kc, &mut packed_a);
            }
            for p in 0..b.panels() {
                let cols = (n - p * NR).min(NR);
                let mut bias_panel = [0f32; NR];
                if let (Some(bias), 0) = (bias, k0) {
                    bias_panel[..cols].copy_from_slice(&bias[p * NR..p * NR + cols]);
                }
                let panel = &b.data[p * k * NR + k0 * NR..p * k * NR + (k0 + kc) * NR];
                for i in (m0..m1).step_by(MR) {
                    let (tile_a, a_row, a_depth) = if pack { (&packed_a[(i - m0) * kc..], 1, MR) } else { (&a[i * lda + k0..], lda, 1) };
                    let tile = Tile {
                        k: kc,
                        a: tile_a,
                        a_row,
                        a_depth,
                        b: panel,
                        c: &mut c[i * ldc + p * NR..],
                        ldc,
                        rows: (m1 - i).min(MR),
                        cols,
                        bias: &bias_panel,
                        accumulate: k0 > 0,
                    };
                    tile.run(kernel);
                }
            }
        }
    }
}

/// Copies `rows x kc` of A into row tiles of `MR`, each stored k-major
/// (`[kk][r]`) so the kernel reads one contiguous stream; missing rows of
/// the last tile are zero.
fn pack_a(a: &[f32], lda: usize, rows: usize, kc: usize, out: &mut Vec<f32>) {
    let tiles = rows.div_ceil(MR);
    // Not cleared: every element is written below, padding rows as zeros.
    out.resize(tiles * MR * kc, 0.0);
    for (t, tile) in out.chunks_exact_mut(MR * kc).enumerate() {
        let real = (rows - t * MR).min(MR);
        if real < MR {
            for depth in tile.chunks_exact_mut(MR) {
                depth[real..].fill(0.0);
            }
        }
        for r in 0..real {
            let src = &a[(t * MR + r) * lda..(t * MR + r) * lda + kc];
            for (kk, v) in src.iter().enumerate() {
                tile[kk * MR + r] = *v;
            }
        }
    }
}

/// The widest kernel the CPU runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    Avx512,
    Avx2,
    Portable,
}

impl Kernel {
    pub fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") {
                return Kernel::Avx512;
            }
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                return Kernel::Avx2;
            }
        }
        Kernel::Portable
    }
}

/// One `MR x NR` block of C: `C (+)= Apack . Bpanel (+ bias)`.
struct Tile<'a> {
    k: usize,
    /// Row `r`, depth `kk` at `a[r * a_row + kk * a_depth]`: packed tiles
    /// (`a_row = 1, a_depth = MR`) or rows read in place (`lda, 1`).
    a: &'a [f32],
    a_row: usize,
    a_depth: usize,
    /// `k x NR`, k-major.
    b: &'a [f32],
    c: &'a mut [f32],
    ldc: usize,
    rows: usize,
    cols: usize,
    bias: &'a [f32; NR],
    /// Add to C (a later depth pass) instead of overwriting it.
    accumulate: bool,
}

impl Tile<'_> {
    /// Packed tiles are zero-padded to MR rows; in-place rows stop at `rows`.
    fn rows_read(&self) -> usize {
        if self.a_depth == MR && self.a_row == 1 {
            MR
        } else {
            self.rows
        }
    }

    fn run(mut self, kernel: Kernel) {
        // The bounds the kernels rely on, checked once per tile.
        assert!((1..=MR).contains(&self.rows) && (1..=NR).contains(&self.cols));
        assert!(self.k >= 1 && self.b.len() >= self.k * NR);
        assert!(self.a.len() > (self.rows_read() - 1) * self.a_row + (self.k - 1) * self.a_depth);
        assert!(self.c.len() >= (self.rows - 1) * self.ldc + self.cols);
        #[cfg(target_arch = "x86_64")]
        match kernel {
            // SAFETY: AVX-512F is present (checked at runtime) and the
            // asserts above cover every address the kernel touches.
            Kernel::Avx512 => unsafe {
                match self.cols.div_ceil(16) {
                    1 => tile_avx512::<1>(&mut self),
                    2 => tile_avx512::<2>(&mut self),
                    3 => tile_avx512::<3>(&mut self),
                    _ => tile_avx512::<NV>(&mut self),
                }
                return;
            },
            // SAFETY: AVX2 and FMA are present (checked at runtime) and
            // the asserts above cover every address the kernel touches.
            Kernel::Avx2 => unsafe {
                tile_avx2(&mut self);
                return;
            },
            Kernel::Portable => {}
        }
        let _ = kernel;
        tile_portable(&mut self);
    }
}

fn tile_portable(t: &mut Tile<'_>) {
    let mut acc = [[0f32; NR]; MR];
    let rows = t.rows_read();
    for (kk, brow) in t.b.chunks_exact(NR).take(t.k).enumerate() {
        for (i, row) in acc.iter_mut().enumerate().take(rows) {
            let av = t.a[i * t.a_row + kk * t.a_depth];
            for (x, bv) in row.iter_mut().zip(brow) {
                *x += av * bv;
            }
        }
    }
    for (i, row) in acc.iter().enumerate().take(t.rows) {
        let out = &mut t.c[i * t.ldc..i * t.ldc + t.cols];
        for ((o, x), bias) in out.iter_mut().zip(row).zip(t.bias) {
            *o = if t.accumulate { *o + x } else { x + bias };
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn tile_avx512<const V: usize>(t: &mut Tile<'_>) {
    use std::arch::x86_64::*;
    let b = t.b.as_ptr();
    // Rows past `rows` (in-place A) alias the last real row: harmless
    // reads, never stored.
    let rows = t.rows_read();
    let mut a_rows = [t.a.as_ptr(); MR];
    for (i, p) in a_rows.iter_mut().enumerate() {
        *p = t.a.as_ptr().add(i.min(rows - 1) * t.a_row);
    }
    let mut acc = [[_mm512_setzero_ps(); V]; MR];
    for kk in 0..t.k {
        // SAFETY (whole function): Tile::run checked that A holds the rows
        // read at depth < k, B holds k rows of NR floats, C holds `rows`
        // rows of `cols` floats at stride ldc; loads and stores of C are
        // masked.
        let mut bv = [_mm512_setzero_ps(); V];
        for (v, slot) in bv.iter_mut().enumerate() {
            *slot = _mm512_loadu_ps(b.add(kk * NR + 16 * v));
        }
        let depth = kk * t.a_depth;
        for (row, a_row) in acc.iter_mut().zip(&a_rows) {
            let av = _mm512_set1_ps(*a_row.add(depth));
            for (x, bvec) in row.iter_mut().zip(&bv) {
                *x = _mm512_fmadd_ps(av, *bvec, *x);
            }
        }
    }
    let c = t.c.as_mut_ptr();
    for (i, row) in acc.iter().enumerate().take(t.rows) {
        for (v, x) in row.iter().enumerate() {
            let lanes = t.cols.saturating_sub(16 * v).min(16);
            if lanes == 0 {
                break;
            }
            let mask: __mmask16 = if lanes == 16 { 0xffff } else { ((1u32 << lanes) - 1) as u16 };
            let p = c.add(i * t.ldc + 16 * v);
            let base = if t.accumulate { _mm512_maskz_loadu_ps(mask, p) } else { _mm512_loadu_ps(t.bias.as_ptr().add(16 * v)) };
            _mm512_mask_storeu_ps(p, mask, _mm512_add_ps(*x, base));
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn tile_avx2(t: &mut Tile<'_>) {
    use std::arch::x86_64::*;
    let b = t.b.as_ptr();
    let rows = t.rows_read();
    // Rows past `rows` (in-place A) alias the last real row, as above.
    let mut a_rows = [t.a.as_ptr(); MR];
    for (i, p) in a_rows.iter_mut().enumerate() {
        *p = t.a.as_ptr().add(i.min(rows - 1) * t.a_row);
    }
    for strip in 0..t.cols.div_ceil(16) {
        let col0 = 16 * strip;
        // SAFETY (whole loop): Tile::run checked that A holds the rows
        // read at depth < k and B holds k rows of NR floats (col0 + 16 <=
        // NR); C is written through a bounds-checked slice.
        let mut acc = [[_mm256_setzero_ps(); 2]; MR];
        for kk in 0..t.k {
            let bp = b.add(kk * NR + col0);
            let (b0, b1) = (_mm256_loadu_ps(bp), _mm256_loadu_ps(bp.add(8)));
            let depth = kk * t.a_depth;
            for (row, a_row) in acc.iter_mut().zip(&a_rows) {
                let av = _mm256_set1_ps(*a_row.add(depth));
                row[0] = _mm256_fmadd_ps(av, b0, row[0]);
                row[1] = _mm256_fmadd_ps(av, b1, row[1]);
            }
        }
        let lanes = (t.cols - col0).min(16);
        for (i, row) in acc.iter().enumerate().take(t.rows) {
            let mut sums = [0f32; 16];
            _mm256_storeu_ps(sums.as_mut_ptr(), row[0]);
            _mm256_storeu_ps(sums.as_mut_ptr().add(8), row[1]);
            let out = &mut t.c[i * t.ldc + col0..i * t.ldc + col0 + lanes];
            for ((o, x), bias) in out.iter_mut().zip(sums).zip(&t.bias[col0..]) {
                *o = if t.accumulate { *o + x } else { x + bias };
            }
        }
    }
}

#[cfg(test)]
#[path = "gemm_tests.rs"]
pub(crate) mod tests;
