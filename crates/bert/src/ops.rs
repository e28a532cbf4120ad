//! The element-wise parts of the encoder: GELU, softmax, layer norm.
//!
//! Each is written as a plain loop over lanes that the compiler vectorises,
//! and compiled twice: once for the baseline target and once with AVX-512
//! enabled, picked at runtime. `exp` and `erf` are polynomial
//! approximations (relative error ~1e-7) because the libm calls do not
//! vectorise and would dominate the run time.

const LANES: usize = 16;

#[inline(always)]
fn exp_approx(x: f32) -> f32 {
    // exp(x) = 2^n * exp(r), |r| <= ln2/2; Cephes' polynomial for exp(r).
    let x = x.clamp(-87.0, 88.0);
    let fx = x * std::f32::consts::LOG2_E;
    // Round to nearest through the float adder (vectorises, unlike round()):
    // 1.5 * 2^23 + fx has unit ulp, so its low mantissa bits hold the
    // rounded fx as an integer offset from the constant's bits.
    let t = fx + 12_582_912.0;
    let n = t - 12_582_912.0;
    let r = x - n * 0.693_359_4 - n * -2.121_944_4e-4;
    let mut p = 1.987_569_1e-4_f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let er = p * r * r + r + 1.0;
    // 2^n from the integer in t's bits: `n as i32` is a saturating cast,
    // which LLVM does element by element (it was half of softmax's time).
    let n_int = (t.to_bits() as i32).wrapping_sub(0x4B40_0000);
    let scale = f32::from_bits((n_int.wrapping_add(127) as u32) << 23);
    er * scale
}

/// Abramowitz & Stegun 7.1.26 (absolute error <= 1.5e-7).
#[inline(always)]
fn erf_approx(x: f32) -> f32 {
    let ax = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * ax);
    let poly = ((((1.061_405_4 * t - 1.453_152_1) * t + 1.421_413_8) * t - 0.284_496_74) * t + 0.254_829_6) * t;
    let y = 1.0 - poly * exp_approx(-ax * ax);
    y.copysign(x)
}

#[inline(always)]
fn gelu_body(xs: &mut [f32]) {
    for x in xs.iter_mut() {
        *x = 0.5 * *x * (1.0 + erf_approx(*x * std::f32::consts::FRAC_1_SQRT_2));
    }
}

#[inline(always)]
fn sum_body(xs: &[f32]) -> f32 {
    let mut lanes = [0f32; LANES];
    let mut chunks = xs.chunks_exact(LANES);
    for c in &mut chunks {
        for (l, v) in lanes.iter_mut().zip(c) {
            *l += v;
        }
    }
    lanes.iter().sum::<f32>() + chunks.remainder().iter().sum::<f32>()
}

#[inline(always)]
fn max_body(xs: &[f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let mut chunks = xs.chunks_exact(LANES);
    for c in &mut chunks {
        for (l, v) in lanes.iter_mut().zip(c) {
            *l = if *v > *l { *v } else { *l };
        }
    }
    lanes.iter().chain(chunks.remainder()).fold(f32::NEG_INFINITY, |m, v| m.max(*v))
}

#[inline(always)]
fn softmax_rows_body(scores: &mut [f32], row_len: usize) {
    for row in scores.chunks_exact_mut(row_len) {
        let max = max_body(row);
        for x in row.iter_mut() {
            *x = exp_approx(*x - max);
        }
        let inv = 1.0 / sum_body(row);
        for x in row.iter_mut() {
            *x *= inv;
        }
    }
}

/// `x = LayerNorm(x + residual)` row by row (`residual` may be empty).
#[inline(always)]
fn add_layer_norm_body(x: &mut [f32], residual: &[f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let dim = gamma.len();
    for (r, row) in x.chunks_exact_mut(dim).enumerate() {
        if !residual.is_empty() {
            for (v, add) in row.iter_mut().zip(&residual[r * dim..(r + 1) * dim]) {
                *v += add;
            }
        }
        let mean = sum_body(row) / dim as f32;
        let mut lanes = [0f32; LANES];
        let mut chunks = row.chunks_exact(LANES);
        for c in &mut chunks {
            for (l, v) in lanes.iter_mut().zip(c) {
                let d = v - mean;
                *l += d * d;
            }
        }
        let var = (lanes.iter().sum::<f32>() + chunks.remainder().iter().map(|v| (v - mean) * (v - mean)).sum::<f32>()) / dim as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
            *v = (*v - mean) * inv * g + b;
        }
    }
}

macro_rules! multiversion {
    ($(#[$doc:meta])* pub fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)? => $body:ident; $fast:ident) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f,avx512dq,avx512bw,avx512vl,fma")]
        unsafe fn $fast($($arg: $ty),*) $(-> $ret)? {
            $body($($arg),*)
        }

        $(#[$doc])*
        pub fn $name($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            if std::is_x86_feature_detected!("avx512f")
                && std::is_x86_feature_detected!("avx512dq")
                && std::is_x86_feature_detected!("avx512bw")
                && std::is_x86_feature_detected!("avx512vl")
                && std::is_x86_feature_detected!("fma")
            {
                // SAFETY: the features the fast copy was compiled for are present.
                return unsafe { $fast($($arg),*) };
            }
            $body($($arg),*)
        }
    };
}

multiversion! {
    /// GELU as BERT defines it (erf form), in place.
    pub fn gelu(xs: &mut [f32]) => gelu_body; gelu_avx512
}

multiversion! {
    /// Softmax of each `row_len`-long row, in place.
    pub fn softmax_rows(scores: &mut [f32], row_len: usize) => softmax_rows_body; softmax_rows_avx512
}

multiversion! {
    /// `x = LayerNorm(x + residual)` per row of `gamma.len()`; pass an empty
    /// residual for a plain layer norm.
    pub fn add_layer_norm(x: &mut [f32], residual: &[f32], gamma: &[f32], beta: &[f32], eps: f32) => add_layer_norm_body; add_layer_norm_avx512
}

#[cfg(test)]
mod tests {
    use super::*;

    fn erf_ref(x: f64) -> f64 {
        // High-precision series / continued fraction is overkill here: use
        // the Taylor series, exact enough for |x| < 3.
        let mut sum = 0.0;
        let mut term = x;
        let mut n = 0.0;
        while term.abs() > 1e-17 {
            sum += term / (2.0 * n + 1.0);
            n += 1.0;
            term *= -x * x / n;
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    }

    #[test]
    fn exp_matches_libm() {
        for i in -8700..8800 {
            let x = i as f32 / 100.0;
            let want = (x as f64).exp();
            let got = exp_approx(x) as f64;
            assert!(((got - want) / want).abs() < 3e-7, "exp({x}) = {got}, want {want}");
        }
    }

    #[test]
    fn erf_matches_series() {
        for i in -300..=300 {
            let x = i as f64 / 100.0;
            assert!((erf_approx(x as f32) as f64 - erf_ref(x)).abs() < 3e-7, "erf({x})");
        }
        assert_eq!(erf_approx(10.0), 1.0);
        assert_eq!(erf_approx(-10.0), -1.0);
    }

    #[test]
    fn fast_and_portable_paths_agree() {
        let xs: Vec<f32> = (0..1000).map(|i| (i as f32 - 500.0) / 70.0).collect();
        let (mut a, mut b) = (xs.clone(), xs.clone());
        gelu(&mut a);
        gelu_body(&mut b);
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            assert!((x - y).abs() < 1e-6);
        }
        let (mut a, mut b) = (xs.clone(), xs.clone());
        softmax_rows(&mut a, 100);
        softmax_rows_body(&mut b, 100);
        for row in a.chunks(100) {
            assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-5);
        }
        for (x, y) in a.iter().zip(&b) {
            assert!((x - y).abs() < 1e-6);
        }
        let gamma: Vec<f32> = (0..100).map(|i| 1.0 + i as f32 / 100.0).collect();
        let beta = vec![0.5; 100];
        let (mut a, mut b) = (xs.clone(), xs.clone());
        add_layer_norm(&mut a, &xs, &gamma, &beta, 1e-12);
        add_layer_norm_body(&mut b, &xs, &gamma, &beta, 1e-12);
        for (x, y) in a.iter().zip(&b) {
            assert!((x - y).abs() < 1e-5);
        }
        // Normalised rows: mean beta-shifted, unit variance before gamma.
        let row: Vec<f32> = b[..100].iter().zip(&gamma).map(|(v, g)| (v - 0.5) / g).collect();
        let mean = row.iter().sum::<f32>() / 100.0;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / 100.0;
        assert!(mean.abs() < 1e-4 && (var - 1.0).abs() < 1e-3);
    }
}
