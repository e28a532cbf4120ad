//! The packed GEMM against a naive product, over odd shapes and every kernel.

use super::*;

fn naive(a: &[f32], m: usize, k: usize, b: &[f32], n: usize, bias: &[f32]) -> Vec<f32> {
    let mut c = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = bias[j] as f64;
            for kk in 0..k {
                s += a[i * k + kk] as f64 * b[kk * n + j] as f64;
            }
            c[i * n + j] = s as f32;
        }
    }
    c
}

pub(crate) fn data(len: usize, seed: u32) -> Vec<f32> {
    let mut x = seed.wrapping_mul(2654435761).max(1);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x % 2001) as f32 / 1000.0 - 1.0
        })
        .collect()
}

fn check(m: usize, k: usize, n: usize, kernel: Kernel) {
    let a = data(m * k, 1);
    let b = data(k * n, 2);
    let bias = data(n, 3);
    let mut packed = PackedMatrix::default();
    packed.pack_rows(&b, k, n, n);
    let mut c = vec![f32::NAN; m * n];
    // Drive the chosen kernel directly so both paths are covered here,
    // with a depth split to exercise accumulation.
    let mut packed_a = Vec::new();
    let half = k / 2;
    for (k0, kc) in [(0, half), (half, k - half)] {
        if kc == 0 {
            continue;
        }
        pack_a(&a[k0..], k, m, kc, &mut packed_a);
        for (t, tile_a) in packed_a.chunks_exact(MR * kc).enumerate() {
            let i0 = t * MR;
            for p in 0..packed.panels() {
                let cols = (n - p * NR).min(NR);
                let mut bias_panel = [0f32; NR];
                bias_panel[..cols].copy_from_slice(&bias[p * NR..p * NR + cols]);
                let panel = &packed.data[p * k * NR + k0 * NR..];
                Tile {
                    k: kc,
                    a: tile_a,
                    a_row: 1,
                    a_depth: MR,
                    b: panel,
                    c: &mut c[i0 * n + p * NR..],
                    ldc: n,
                    rows: (m - i0).min(MR),
                    cols,
                    bias: &bias_panel,
                    accumulate: k0 > 0 && half > 0,
                }
                .run(kernel);
            }
        }
    }
    let want = naive(&a, m, k, &b, n, &bias);
    for (x, y) in c.iter().zip(&want) {
        assert!((x - y).abs() < 1e-3, "{m}x{k}x{n} {kernel:?}: {x} vs {y}");
    }
}

#[test]
fn portable_kernel_matches_naive_product() {
    for (m, k, n) in [(1, 1, 1), (13, 7, 33), (25, 64, 70), (12, 384, 32), (3, 600, 16)] {
        check(m, k, n, Kernel::Portable);
    }
}

#[test]
fn vector_kernels_match_naive_product_when_available() {
    let here = Kernel::detect();
    let kernels: &[Kernel] = match here {
        Kernel::Avx512 => &[Kernel::Avx512, Kernel::Avx2],
        Kernel::Avx2 => &[Kernel::Avx2],
        Kernel::Portable => {
            eprintln!("neither AVX-512 nor AVX2 here; the portable kernel is the one in use");
            &[]
        }
    };
    for kernel in kernels {
        for (m, k, n) in [(1, 1, 1), (13, 7, 33), (25, 64, 70), (12, 384, 32), (100, 5, 17), (7, 40, 64)] {
            check(m, k, n, *kernel);
        }
    }
}

#[test]
fn matmul_handles_strided_views_and_transposes() {
    let (m, k, n) = (130, 300, 45);
    // A is a view with row stride 320 into a bigger buffer.
    let big = data(m * 320, 4);
    let a: Vec<f32> = (0..m).flat_map(|i| big[i * 320..i * 320 + k].to_vec()).collect();
    let bt = data(n * k, 5); // n x k: we want B = bt^T
    let b: Vec<f32> = (0..k).flat_map(|kk| (0..n).map(|j| bt[j * k + kk]).collect::<Vec<_>>()).collect();
    let mut packed = PackedMatrix::default();
    packed.pack_transposed(&bt, k, n, k);
    let mut c = vec![0f32; m * 60];
    matmul(&big, 320, m, &packed, &mut c, 60, None);
    let want = naive(&a, m, k, &b, n, &vec![0.0; n]);
    for i in 0..m {
        for j in 0..n {
            assert!((c[i * 60 + j] - want[i * n + j]).abs() < 1e-3);
        }
    }
    let lin = PackedMatrix::from_linear_weight(&bt, n, k);
    let mut c2 = vec![0f32; m * n];
    matmul(&big, 320, m, &lin, &mut c2, n, None);
    for i in 0..m {
        for j in 0..n {
            assert!((c2[i * n + j] - want[i * n + j]).abs() < 1e-3);
        }
    }
}
