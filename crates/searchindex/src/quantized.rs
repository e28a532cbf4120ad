//! The held vectors again, in 8 bits and back to back, for a first pass of
//! nearest-neighbour search that reads a quarter of the memory.
//!
//! Exact search over 100,000 fp32 vectors of 384 components reads 150 MB
//! per query and is bound by memory bandwidth (28 ms here); the same scan
//! over i8 copies reads 38 MB. Each vector is quantised symmetrically with
//! one scale `s` (its largest component / 127), so each component is off by
//! at most `s / 2`, and the approximate dot product with a query `x` is off
//! by at most `s / 2 · ‖x‖₁`. That bound lets the caller keep every vector
//! that could still be among the best and score only those exactly: the
//! result is the exact ranking, not an approximation of it.

/// Slack for the f32 rounding of the approximate score (cosines are at
/// most 1 in magnitude; 384 products in f32 round to well below this).
const ROUNDING_SLACK: f32 = 1e-4;

#[derive(Debug, Default)]
pub(crate) struct QuantizedVectors {
    /// Components per vector (0 until the first vector arrives).
    dim: usize,
    /// `dim` values per slot, slot after slot.
    values: Vec<i8>,
    /// Per slot: the scale (0: no vector of `dim` components held).
    scale: Vec<f32>,
    /// Per slot: the model of the vector.
    model: Vec<u16>,
    /// Per slot: 1 / the norm of the original vector.
    inv_norm: Vec<f32>,
}

/// A slot's approximate cosine with the query and how far off it can be.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Approximate {
    pub slot: u32,
    pub cosine: f32,
    pub error: f32,
}

impl QuantizedVectors {
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Bytes held (for the cache's budget).
    pub fn bytes(&self) -> usize {
        if self.dim == 0 {
            0
        } else {
            self.values.len() + self.scale.len() * 10
        }
    }

    /// Appends the next slot's vector (or none).
    pub fn push(&mut self, vector: Option<(u16, &[f32], f64)>) {
        let slots = self.scale.len();
        if let Some((_, values, _)) = vector {
            if self.dim == 0 && !values.is_empty() {
                self.dim = values.len();
                self.values.resize(slots * self.dim, 0);
            }
        }
        match vector {
            Some((model, values, norm)) if values.len() == self.dim && self.dim > 0 && norm > 0.0 => {
                let max = values.iter().fold(0f32, |m, v| m.max(v.abs()));
                let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
                self.values.extend(values.iter().map(|v| (v / scale).round().clamp(-127.0, 127.0) as i8));
                self.scale.push(scale);
                self.model.push(model);
                self.inv_norm.push((1.0 / norm) as f32);
            }
            _ => {
                self.values.resize(self.values.len() + self.dim, 0);
                self.scale.push(0.0);
                self.model.push(u16::MAX);
                self.inv_norm.push(0.0);
            }
        }
    }

    /// Forgets a slot's vector (its chunk is gone).
    pub fn clear_slot(&mut self, slot: usize) {
        self.scale[slot] = 0.0;
    }

    /// Forgets every vector, keeping one empty entry per slot.
    pub fn clear(&mut self) {
        let slots = self.scale.len();
        *self = QuantizedVectors::default();
        for _ in 0..slots {
            self.push(None);
        }
    }

    /// Keeps the slots whose `keep` is true, in order (compaction).
    pub fn retain(&mut self, keep: &[bool]) {
        let dim = self.dim;
        let mut next = 0;
        for (slot, kept) in keep.iter().enumerate() {
            if !kept {
                continue;
            }
            if next != slot {
                self.values.copy_within(slot * dim..(slot + 1) * dim, next * dim);
                self.scale[next] = self.scale[slot];
                self.model[next] = self.model[slot];
                self.inv_norm[next] = self.inv_norm[slot];
            }
            next += 1;
        }
        self.values.truncate(next * dim);
        self.scale.truncate(next);
        self.model.truncate(next);
        self.inv_norm.truncate(next);
    }

    /// Every live slot with a vector of `model` and the query's dimension:
    /// its approximate cosine with `query` and the bound of its error.
    pub fn approximate(&self, model: u16, query: &[f32], alive: &[bool]) -> Vec<Approximate> {
        if query.len() != self.dim || self.dim == 0 {
            return Vec::new();
        }
        let norm = query.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm == 0.0 {
            return Vec::new();
        }
        let l1 = query.iter().map(|x| x.abs()).sum::<f32>();
        let mut out = Vec::with_capacity(self.scale.len());
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx512f") {
            // SAFETY: the feature the fast copy was compiled for is present.
            unsafe { self.scan_avx512(model, query, alive, norm, l1, &mut out) };
            return out;
        }
        self.scan(model, query, alive, norm, l1, &mut out);
        out
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn scan_avx512(&self, model: u16, query: &[f32], alive: &[bool], norm: f32, l1: f32, out: &mut Vec<Approximate>) {
        self.scan(model, query, alive, norm, l1, out)
    }

    #[inline(always)]
    fn scan(&self, model: u16, query: &[f32], alive: &[bool], norm: f32, l1: f32, out: &mut Vec<Approximate>) {
        let inv_query = 1.0 / norm;
        for (slot, q) in self.values.chunks_exact(self.dim).enumerate() {
            let scale = self.scale[slot];
            if scale == 0.0 || self.model[slot] != model || !alive[slot] {
                continue;
            }
            let factor = self.inv_norm[slot] * inv_query;
            let cosine = scale * dot_i8(query, q) * factor;
            let error = 0.5 * scale * l1 * factor + ROUNDING_SLACK;
            out.push(Approximate { slot: slot as u32, cosine, error });
        }
    }
}

/// `Σ a_k · q_k` in sixteen lanes, which the compiler turns into vector
/// instructions (sign extension, conversion, multiply-add).
#[inline(always)]
fn dot_i8(a: &[f32], q: &[i8]) -> f32 {
    const LANES: usize = 16;
    let mut lanes = [0f32; LANES];
    let (a16, q16) = (a.chunks_exact(LANES), q.chunks_exact(LANES));
    let tail: f32 = a16.remainder().iter().zip(q16.remainder()).map(|(x, y)| x * f32::from(*y)).sum();
    for (x, y) in a16.zip(q16) {
        for i in 0..LANES {
            lanes[i] += x[i] * f32::from(y[i]);
        }
    }
    lanes.iter().sum::<f32>() + tail
}
