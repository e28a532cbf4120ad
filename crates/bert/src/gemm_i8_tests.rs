//! The 8-bit product against the dequantised inputs multiplied in f64
//! (exactly what the integers stand for), and against the fp32 product
//! within the quantisation error, over odd shapes and both kernels.

use super::*;
use crate::gemm::tests::data;

/// `C` from the quantised values, in f64.
fn dequantised(a: &QuantizedRows, b: &PackedI8, bias: &[f32]) -> Vec<f64> {
    let (m, n, k) = (a.rows(), b.n, b.k);
    let mut c = vec![0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = 0f64;
            for kk in 0..k {
                let av = (f64::from(a.data[i * a.kp + kk]) - f64::from(a.zero[i])) * f64::from(a.scale[i]);
                let bv = f64::from(b.q(kk, j)) * f64::from(b.scale[j]);
                s += av * bv;
            }
            c[i * n + j] = s + f64::from(bias[j]);
        }
    }
    c
}

fn run(a: &[f32], m: usize, k: usize, w: &[f32], n: usize, bias: &[f32], vnni: bool) -> (QuantizedRows, PackedI8, Vec<f32>) {
    let packed = PackedI8::from_linear_weight(w, n, k);
    let mut q = QuantizedRows::default();
    q.quantize(a, k, m, k);
    let ldc = n + 3;
    let mut c = vec![f32::NAN; m * ldc];
    matmul_i8_with(&q, &packed, &mut c, ldc, Some(bias), vnni);
    for i in 0..m {
        assert!(c[i * ldc + n..(i + 1) * ldc].iter().all(|v| v.is_nan()), "wrote past the row's columns");
    }
    let c = (0..m).flat_map(|i| c[i * ldc..i * ldc + n].to_vec()).collect();
    (q, packed, c)
}

fn check(m: usize, k: usize, n: usize, vnni: bool) {
    let a = data(m * k, 1);
    let w = data(n * k, 2);
    let bias = data(n, 3);
    let (q, packed, c) = run(&a, m, k, &w, n, &bias, vnni);
    let exact = dequantised(&q, &packed, &bias);
    for (idx, (got, want)) in c.iter().zip(&exact).enumerate() {
        let tol = 1e-5 * (1.0 + want.abs()) * (k as f64).sqrt();
        assert!((f64::from(*got) - want).abs() <= tol, "{m}x{k}x{n} vnni={vnni} at {idx}: {got} vs {want}");
    }
    // Against the unquantised product: the error of each term is at most
    // half a step of A times |W| plus half a step of W times |A|.
    for i in 0..m {
        for j in 0..n {
            let mut s = f64::from(bias[j]);
            let mut bound = 0f64;
            for kk in 0..k {
                let (av, wv) = (f64::from(a[i * k + kk]), f64::from(w[j * k + kk]));
                s += av * wv;
                bound += 0.5 * f64::from(q.scale[i]) * wv.abs() + 0.5 * f64::from(packed.scale[j]) * av.abs();
            }
            let got = f64::from(c[i * n + j]);
            assert!((got - s).abs() <= bound * 1.01 + 1e-5, "{m}x{k}x{n} at ({i},{j}): {got} vs fp {s}, bound {bound}");
        }
    }
}

#[test]
fn portable_kernel_over_odd_shapes() {
    for (m, k, n) in [(1, 1, 1), (1, 4, 64), (5, 7, 17), (6, 8, 64), (7, 13, 65), (13, 33, 130), (97, 40, 70), (200, 384, 130)] {
        check(m, k, n, false);
    }
}

#[test]
fn vnni_kernel_over_odd_shapes() {
    if !has_vnni() {
        eprintln!("no AVX-512 VNNI on this CPU: only the portable kernel is tested");
        return;
    }
    for (m, k, n) in [(1, 1, 1), (1, 4, 64), (5, 7, 17), (6, 8, 64), (7, 13, 65), (13, 33, 130), (97, 40, 70), (200, 384, 130)] {
        check(m, k, n, true);
    }
}

#[test]
fn kernels_agree_bit_for_bit_on_the_integers() {
    // Same integers, the epilogue differs only in FMA rounding.
    if !has_vnni() {
        return;
    }
    let (m, k, n) = (31, 100, 150);
    let (a, w, bias) = (data(m * k, 4), data(n * k, 5), data(n, 6));
    let (_, _, portable) = run(&a, m, k, &w, n, &bias, false);
    let (_, _, vnni) = run(&a, m, k, &w, n, &bias, true);
    for (p, v) in portable.iter().zip(&vnni) {
        assert!((p - v).abs() <= 1e-5 * (1.0 + p.abs()), "{p} vs {v}");
    }
}

#[test]
fn quantisation_keeps_zero_exact_and_handles_degenerate_rows() {
    let k = 9;
    let rows: Vec<f32> = [
        vec![0.0; k],                                                        // all zero
        vec![-2.0; k],                                                       // one negative value
        vec![3.0; k],                                                        // one positive value
        (0..k).map(|i| if i == 4 { 0.0 } else { 1.0 + i as f32 }).collect(), // zero inside
    ]
    .concat();
    let mut q = QuantizedRows::default();
    q.quantize(&rows, k, 4, k);
    for i in 0..4 {
        for kk in 0..k {
            let x = rows[i * k + kk];
            let back = (f32::from(q.data[i * q.kp + kk]) - q.zero[i] as f32) * q.scale[i];
            assert!((back - x).abs() <= q.scale[i] * 0.5 + 1e-6, "row {i} col {kk}: {x} -> {back}");
            if x == 0.0 {
                assert_eq!(back, 0.0, "row {i}: zero not exact");
            }
        }
    }
    // A zero weight column is allowed (scale 1, all q = 0).
    let packed = PackedI8::from_linear_weight(&vec![0.0; 3 * k], 3, k);
    let mut c = vec![f32::NAN; 4 * 3];
    matmul_i8(&q, &packed, &mut c, 3, Some(&[1.0, 2.0, 3.0]));
    assert_eq!(&c[..3], &[1.0, 2.0, 3.0]);
}
