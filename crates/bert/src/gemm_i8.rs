//! 8-bit matrix products for the encoder's projections (the `int8`
//! precision).
//!
//! Weights are quantised once at load time, symmetric and per output
//! column: `W[kk][j] ≈ q[kk][j] · s_w[j]` with `q` in -127..=127. Activations
//! are quantised per row (per token) on every call, asymmetric over the
//! row's range: `A[i][kk] ≈ (u[i][kk] − z_i) · s_a[i]` with `u` in 0..=255.
//! Then
//!
//! ```text
//! C[i][j] = s_a[i] · s_w[j] · (Σ_kk u[i][kk]·q[kk][j] − z_i · Σ_kk q[kk][j]) + bias[j]
//! ```
//!
//! The integer sum is exact in i32 (at most 255 · 127 per term), which is
//! what AVX-512 VNNI's `vpdpbusd` computes: four u8 × s8 products per 32-bit
//! lane and instruction, 64 multiply-adds per instruction against 16 for an
//! fp32 FMA. Per-row activation scales keep a token with large values from
//! costing the others their precision. Without VNNI a portable kernel
//! computes the same integers, slowly (tests and other CPUs).

/// Columns per packed panel: four vectors of 16 i32 lanes.
pub const NR: usize = 64;
/// Rows per register tile (6 × 4 accumulators, 4 panel vectors, 1 broadcast).
const MR: usize = 6;
/// Rows per cache block: their quantised rows stay in L2 while every panel
/// streams past them.
const MB: usize = 96;

/// `B` (`k x n`, e.g. a `Linear` weight transposed), quantised and packed as
/// `ceil(n / NR)` panels; inside a panel, groups of four depths:
/// `[kk / 4][column][kk % 4]`, 256 bytes per group (what one `vpdpbusd` per
/// 16 columns reads).
#[derive(Debug, Clone, Default)]
pub struct PackedI8 {
    k: usize,
    /// `k` rounded up to a multiple of 4 (zero-padded depths).
    kp: usize,
    n: usize,
    data: Vec<i8>,
    /// Per column, `n` rounded up to panels (padding columns: scale 0).
    scale: Vec<f32>,
    /// Per column, `Σ_kk q[kk][j]`: the zero-point correction.
    col_sum: Vec<i32>,
}

impl PackedI8 {
    pub fn k(&self) -> usize {
        self.k
    }

    pub fn n(&self) -> usize {
        self.n
    }

    fn panels(&self) -> usize {
        self.n.div_ceil(NR)
    }

    /// From a PyTorch `Linear` weight, `[out x in]` row-major: `B = W^T`.
    pub fn from_linear_weight(w: &[f32], out_features: usize, in_features: usize) -> Self {
        let (k, n) = (in_features, out_features);
        let kp = k.div_ceil(4) * 4;
        let panels = n.div_ceil(NR);
        let mut m = PackedI8 { k, kp, n, data: vec![0; panels * kp * NR], scale: vec![0.0; panels * NR], col_sum: vec![0; panels * NR] };
        for j in 0..n {
            let row = &w[j * k..(j + 1) * k];
            let max = row.iter().fold(0f32, |m, v| m.max(v.abs()));
            let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
            m.scale[j] = scale;
            let (p, jj) = (j / NR, j % NR);
            let panel = &mut m.data[p * kp * NR..(p + 1) * kp * NR];
            let mut sum = 0i32;
            for (kk, v) in row.iter().enumerate() {
                let q = (v / scale).round().clamp(-127.0, 127.0) as i8;
                panel[(kk / 4) * 4 * NR + jj * 4 + kk % 4] = q;
                sum += i32::from(q);
            }
            m.col_sum[j] = sum;
        }
        m
    }

    /// The quantised weight `q[kk][j]` (tests).
    #[cfg(test)]
    fn q(&self, kk: usize, j: usize) -> i8 {
        let (p, jj) = (j / NR, j % NR);
        self.data[p * self.kp * NR + (kk / 4) * 4 * NR + jj * 4 + kk % 4]
    }
}

/// Rows of `A` quantised to u8 with a scale and zero point each; rows are
/// `kp` bytes (zero-padded depths), so four depths load as one i32.
#[derive(Debug, Clone, Default)]
pub struct QuantizedRows {
    kp: usize,
    data: Vec<u8>,
    scale: Vec<f32>,
    zero: Vec<i32>,
}

impl QuantizedRows {
    /// Quantises `m` rows of `k` floats (row stride `lda`). The range of a row
    /// always includes 0, so zeros stay exact.
    pub fn quantize(&mut self, a: &[f32], lda: usize, m: usize, k: usize) {
        let kp = k.div_ceil(4) * 4;
        self.kp = kp;
        // Every byte is written below (padding depths included): no clearing.
        self.data.resize(m * kp, 0);
        self.scale.clear();
        self.zero.clear();
        for i in 0..m {
            let (scale, zero) = quantize_row(&a[i * lda..i * lda + k], &mut self.data[i * kp..(i + 1) * kp]);
            self.scale.push(scale);
            self.zero.push(zero);
        }
    }

    fn rows(&self) -> usize {
        self.scale.len()
    }
}

/// One row to u8 (`out` may be longer than `row`: the rest is zeroed);
/// returns its scale and zero point.
fn quantize_row(row: &[f32], out: &mut [u8]) -> (f32, i32) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512bw") {
        // SAFETY: the features the fast copy was compiled for are present.
        return unsafe { quantize_row_avx512(row, out) };
    }
    quantize_row_body(row, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq")]
unsafe fn quantize_row_avx512(row: &[f32], out: &mut [u8]) -> (f32, i32) {
    quantize_row_body(row, out)
}

/// Plain loops the compiler vectorises: lane-wise min/max, then
/// `x / scale + zero` clamped to 0..=255 and rounded to nearest through the
/// float adder: + 2^23 leaves the integer in the low mantissa bits. (A
/// `round` call, or a saturating `as u8` cast, is done element by element.)
#[inline(always)]
fn quantize_row_body(row: &[f32], out: &mut [u8]) -> (f32, i32) {
    const LANES: usize = 16;
    let (mut lo, mut hi) = ([0f32; LANES], [0f32; LANES]);
    let mut chunks = row.chunks_exact(LANES);
    for c in &mut chunks {
        for ((l, h), v) in lo.iter_mut().zip(hi.iter_mut()).zip(c) {
            *l = if *v < *l { *v } else { *l };
            *h = if *v > *h { *v } else { *h };
        }
    }
    let (lo, hi) = chunks.remainder().iter().chain(lo.iter()).chain(hi.iter()).fold((0f32, 0f32), |(l, h), v| (l.min(*v), h.max(*v)));
    let scale = if hi > lo { (hi - lo) / 255.0 } else { 1.0 };
    let zero = (-lo / scale + 0.5).floor().clamp(0.0, 255.0);
    let inv = 1.0 / scale;
    let (body, padding) = out.split_at_mut(row.len());
    for (q, v) in body.iter_mut().zip(row) {
        let y = (v * inv + zero).clamp(0.0, 255.0);
        *q = ((y + 8_388_608.0).to_bits() & 0xFF) as u8;
    }
    padding.fill(0);
    (scale, zero as i32)
}

/// `C = dequant(A_q · B_q) (+ bias)`: `A_q` from [`QuantizedRows::quantize`]
/// with the same depth as `B`, `C` is `m x n` with row stride `ldc`.
///
/// Panics when shapes disagree (a programming error: shapes come from the
/// model config).
pub fn matmul_i8(a: &QuantizedRows, b: &PackedI8, c: &mut [f32], ldc: usize, bias: Option<&[f32]>) {
    matmul_i8_with(a, b, c, ldc, bias, has_vnni())
}

fn matmul_i8_with(a: &QuantizedRows, b: &PackedI8, c: &mut [f32], ldc: usize, bias: Option<&[f32]>, vnni: bool) {
    let (m, n) = (a.rows(), b.n);
    if m == 0 || n == 0 {
        return;
    }
    assert_eq!(a.kp, b.kp, "depths differ");
    assert!(ldc >= n && c.len() >= (m - 1) * ldc + n, "C too short");
    if let Some(bias) = bias {
        assert!(bias.len() >= n, "bias too short");
    }
    for m0 in (0..m).step_by(MB) {
        let m1 = (m0 + MB).min(m);
        for p in 0..b.panels() {
            let cols = (n - p * NR).min(NR);
            let mut bias_panel = [0f32; NR];
            if let Some(bias) = bias {
                bias_panel[..cols].copy_from_slice(&bias[p * NR..p * NR + cols]);
            }
            for i in (m0..m1).step_by(MR) {
                let tile = TileI8 {
                    kp: b.kp,
                    a: &a.data[i * a.kp..],
                    rows: (m1 - i).min(MR),
                    a_scale: &a.scale[i..],
                    a_zero: &a.zero[i..],
                    b: &b.data[p * b.kp * NR..(p + 1) * b.kp * NR],
                    b_scale: &b.scale[p * NR..(p + 1) * NR],
                    b_sum: &b.col_sum[p * NR..(p + 1) * NR],
                    bias: &bias_panel,
                    c: &mut c[i * ldc + p * NR..],
                    ldc,
                    cols,
                };
                tile.run(vnni);
            }
        }
    }
}

/// Whether the VNNI kernel runs here.
pub fn has_vnni() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512bw") && std::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// One `rows x cols` block of C from `rows` quantised rows and one panel.
struct TileI8<'a> {
    kp: usize,
    /// Row `r` at `a[r * kp..]`.
    a: &'a [u8],
    rows: usize,
    a_scale: &'a [f32],
    a_zero: &'a [i32],
    /// `kp / 4` groups of `NR x 4` bytes.
    b: &'a [i8],
    b_scale: &'a [f32],
    b_sum: &'a [i32],
    bias: &'a [f32; NR],
    c: &'a mut [f32],
    ldc: usize,
    cols: usize,
}

impl TileI8<'_> {
    fn run(mut self, vnni: bool) {
        // The bounds the kernels rely on, checked once per tile.
        assert!((1..=MR).contains(&self.rows) && (1..=NR).contains(&self.cols));
        assert!(self.kp >= 4 && self.kp.is_multiple_of(4));
        assert!(self.a.len() >= self.rows * self.kp);
        assert!(self.a_scale.len() >= self.rows && self.a_zero.len() >= self.rows);
        assert!(self.b.len() >= self.kp * NR && self.b_scale.len() >= NR && self.b_sum.len() >= NR);
        assert!(self.c.len() >= (self.rows - 1) * self.ldc + self.cols);
        #[cfg(target_arch = "x86_64")]
        if vnni {
            // SAFETY: AVX-512F/BW/VNNI are present (checked at runtime) and
            // the asserts above cover every address the kernel touches.
            unsafe {
                match self.cols.div_ceil(16) {
                    1 => tile_vnni::<1>(&mut self),
                    2 => tile_vnni::<2>(&mut self),
                    3 => tile_vnni::<3>(&mut self),
                    _ => tile_vnni::<4>(&mut self),
                }
            };
            return;
        }
        let _ = vnni;
        tile_portable(&mut self);
    }

    /// `C[i][j]` from the exact integer sum.
    fn store(&mut self, i: usize, j: usize, acc: i32) {
        let corrected = acc - self.a_zero[i] * self.b_sum[j];
        self.c[i * self.ldc + j] = corrected as f32 * (self.a_scale[i] * self.b_scale[j]) + self.bias[j];
    }
}

fn tile_portable(t: &mut TileI8<'_>) {
    let mut acc = [[0i32; NR]; MR];
    for (g, group) in t.b.chunks_exact(4 * NR).take(t.kp / 4).enumerate() {
        for (i, row) in acc.iter_mut().enumerate().take(t.rows) {
            let a = &t.a[i * t.kp + 4 * g..i * t.kp + 4 * g + 4];
            for (j, x) in row.iter_mut().enumerate() {
                let b = &group[4 * j..4 * j + 4];
                *x += a.iter().zip(b).map(|(u, q)| i32::from(*u) * i32::from(*q)).sum::<i32>();
            }
        }
    }
    for (i, row) in acc.iter().enumerate().take(t.rows) {
        for (j, x) in row.iter().enumerate().take(t.cols) {
            t.store(i, j, *x);
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn tile_vnni<const V: usize>(t: &mut TileI8<'_>) {
    use std::arch::x86_64::*;
    // SAFETY (whole function): TileI8::run checked that A holds `rows` rows
    // of `kp` bytes, B holds `kp / 4` groups of 4 * NR bytes, the panel's
    // scales and sums hold NR entries and C holds `rows` rows of `cols`
    // floats at stride ldc; stores to C are masked. Rows past `rows` alias
    // the last real row: harmless reads, never stored.
    let b = t.b.as_ptr();
    let mut a_rows = [t.a.as_ptr(); MR];
    for (i, p) in a_rows.iter_mut().enumerate() {
        *p = t.a.as_ptr().add(i.min(t.rows - 1) * t.kp);
    }
    // One array of accumulators per row (not one [[_; V]; MR]): LLVM keeps
    // arrays this small in registers, while the 1.5 KB two-level array was
    // zeroed with memset and kept on the stack (11% of an encode in perf).
    let z = _mm512_setzero_si512();
    let (mut r0, mut r1, mut r2, mut r3, mut r4, mut r5) = ([z; V], [z; V], [z; V], [z; V], [z; V], [z; V]);
    for g in 0..t.kp / 4 {
        let mut bv = [z; V];
        for (v, slot) in bv.iter_mut().enumerate() {
            *slot = _mm512_loadu_si512(b.add(g * 4 * NR + 64 * v) as *const __m512i);
        }
        macro_rules! row {
            ($acc:ident, $i:expr) => {{
                let a4 = _mm512_set1_epi32((a_rows[$i].add(4 * g) as *const i32).read_unaligned());
                for v in 0..V {
                    $acc[v] = _mm512_dpbusd_epi32($acc[v], a4, bv[v]);
                }
            }};
        }
        row!(r0, 0);
        row!(r1, 1);
        row!(r2, 2);
        row!(r3, 3);
        row!(r4, 4);
        row!(r5, 5);
    }
    let acc = [r0, r1, r2, r3, r4, r5];
    let c = t.c.as_mut_ptr();
    for (i, row) in acc.iter().enumerate().take(t.rows) {
        let zero = _mm512_set1_epi32(t.a_zero[i]);
        let a_scale = _mm512_set1_ps(t.a_scale[i]);
        for (v, x) in row.iter().enumerate() {
            let lanes = t.cols.saturating_sub(16 * v).min(16);
            if lanes == 0 {
                break;
            }
            let mask: __mmask16 = if lanes == 16 { 0xffff } else { ((1u32 << lanes) - 1) as u16 };
            let sums = _mm512_loadu_si512(t.b_sum.as_ptr().add(16 * v) as *const __m512i);
            let corrected = _mm512_sub_epi32(*x, _mm512_mullo_epi32(zero, sums));
            let scale = _mm512_mul_ps(a_scale, _mm512_loadu_ps(t.b_scale.as_ptr().add(16 * v)));
            let bias = _mm512_loadu_ps(t.bias.as_ptr().add(16 * v));
            let out = _mm512_fmadd_ps(_mm512_cvtepi32_ps(corrected), scale, bias);
            _mm512_mask_storeu_ps(c.add(i * t.ldc + 16 * v), mask, out);
        }
    }
}

#[cfg(test)]
#[path = "gemm_i8_tests.rs"]
mod tests;
