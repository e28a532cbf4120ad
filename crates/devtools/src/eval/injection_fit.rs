//! The fitting behind `rag-dev eval injection --fit`: an L2-regularised,
//! class-weighted logistic regression over standardised embedding
//! dimensions (Newton's method, the standardisation folded back into the
//! weights so they read the raw embedding), folds grouped by the set's
//! `group` column, and the threshold rule.

/// A model fitted on embeddings.
pub(super) enum Model {
    Linear(Linear),
    Mlp(Mlp),
}

impl Model {
    pub fn probability(&self, x: &[f32]) -> f64 {
        match self {
            Model::Linear(m) => m.probability(x),
            Model::Mlp(m) => m.probability(x),
        }
    }
}

/// What to fit: a logistic regression with its L2 penalty, or a network
/// of one hidden layer (ReLU) with its units and weight decay.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Spec {
    Linear { l2: f64 },
    Mlp { hidden: usize, l2: f64 },
}

impl Spec {
    pub fn fit(self, xs: &[&[f32]], ys: &[bool]) -> Model {
        match self {
            Spec::Linear { l2 } => Model::Linear(fit(xs, ys, l2)),
            Spec::Mlp { hidden, l2 } => Model::Mlp(fit_mlp(xs, ys, hidden, l2)),
        }
    }

    pub fn l2(self) -> f64 {
        match self {
            Spec::Linear { l2 } | Spec::Mlp { l2, .. } => l2,
        }
    }
}

impl std::fmt::Display for Spec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Spec::Linear { l2 } => write!(f, "linear L2 {l2}"),
            Spec::Mlp { hidden, l2 } => write!(f, "MLP {hidden} L2 {l2}"),
        }
    }
}

/// One hidden layer over the raw embedding: p = σ(w2·relu(W1 x + b1) + b2)
/// (the standardisation folded into W1 and b1).
pub(super) struct Mlp {
    /// `hidden` rows of the embedding's length.
    pub w1: Vec<Vec<f32>>,
    pub b1: Vec<f32>,
    pub w2: Vec<f32>,
    pub b2: f32,
}

impl Mlp {
    pub fn probability(&self, x: &[f32]) -> f64 {
        let z: f32 = self
            .w1
            .iter()
            .zip(&self.b1)
            .zip(&self.w2)
            .map(|((row, b), w)| w * (row.iter().zip(x).map(|(a, v)| a * v).sum::<f32>() + b).max(0.0))
            .sum::<f32>()
            + self.b2;
        1.0 / (1.0 + (-f64::from(z)).exp())
    }
}

/// Full-batch Adam on the class-weighted mean log-loss plus
/// `l2`/2·‖weights‖², from a seeded start (the same fit every run).
fn fit_mlp(xs: &[&[f32]], ys: &[bool], hidden: usize, l2: f64) -> Mlp {
    const EPOCHS: usize = 300;
    const RATE: f32 = 0.003;
    let n = xs.len();
    let d = xs.first().map_or(0, |x| x.len());
    let (mean, sd) = standardisation(xs);
    let z: Vec<Vec<f32>> =
        xs.iter().map(|x| x.iter().zip(&mean).zip(&sd).map(|((v, m), s)| ((f64::from(*v) - m) / s) as f32).collect()).collect();
    let positives = ys.iter().filter(|y| **y).count().max(1) as f32;
    let negatives = (n as f32 - positives).max(1.0);
    let c: Vec<f32> = ys.iter().map(|y| if *y { 0.5 / positives } else { 0.5 / negatives }).collect();
    let mut rng = fastrand::Rng::with_seed(61);
    let a = (6.0 / (d + hidden) as f32).sqrt();
    // Parameters in one vector: W1 (hidden × d), b1, w2, b2.
    let size = hidden * d + 2 * hidden + 1;
    let mut theta: Vec<f32> = (0..size).map(|i| if i < hidden * d { (rng.f32() * 2.0 - 1.0) * a } else { 0.0 }).collect();
    for j in 0..hidden {
        theta[hidden * d + hidden + j] = (rng.f32() * 2.0 - 1.0) * (6.0 / (hidden + 1) as f32).sqrt();
    }
    let (mut m1, mut m2) = (vec![0.0f32; size], vec![0.0f32; size]);
    let l2 = l2 as f32;
    let mut act = vec![0.0f32; hidden];
    for epoch in 1..=EPOCHS {
        let mut grad = vec![0.0f32; size];
        for ((row, y), ci) in z.iter().zip(ys).zip(&c) {
            let (w1, rest) = theta.split_at(hidden * d);
            let (b1, rest) = rest.split_at(hidden);
            let (w2, b2) = rest.split_at(hidden);
            let mut out = b2[0];
            for j in 0..hidden {
                let pre = w1[j * d..(j + 1) * d].iter().zip(row).map(|(a, v)| a * v).sum::<f32>() + b1[j];
                act[j] = pre.max(0.0);
                out += w2[j] * act[j];
            }
            let p = 1.0 / (1.0 + (-out).exp());
            let r = ci * (p - if *y { 1.0 } else { 0.0 });
            grad[size - 1] += r;
            for j in 0..hidden {
                grad[hidden * d + hidden + j] += r * act[j];
                if act[j] > 0.0 {
                    let back = r * w2[j];
                    grad[hidden * d + j] += back;
                    for (g, v) in grad[j * d..(j + 1) * d].iter_mut().zip(row) {
                        *g += back * v;
                    }
                }
            }
        }
        for i in (0..hidden * d).chain(hidden * d + hidden..size - 1) {
            grad[i] += l2 * theta[i];
        }
        // Adam.
        let (b1t, b2t) = (1.0 - 0.9f32.powi(epoch as i32), 1.0 - 0.999f32.powi(epoch as i32));
        for i in 0..size {
            m1[i] = 0.9 * m1[i] + 0.1 * grad[i];
            m2[i] = 0.999 * m2[i] + 0.001 * grad[i] * grad[i];
            theta[i] -= RATE * (m1[i] / b1t) / ((m2[i] / b2t).sqrt() + 1e-8);
        }
    }
    // Fold the standardisation in: W1' = W1/sd, b1' = b1 − W1'·mean.
    let mut w1 = vec![];
    let mut b1 = vec![];
    for j in 0..hidden {
        let row: Vec<f32> = theta[j * d..(j + 1) * d].iter().zip(&sd).map(|(w, s)| (f64::from(*w) / s) as f32).collect();
        let shift: f64 = row.iter().zip(&mean).map(|(w, m)| f64::from(*w) * m).sum();
        b1.push((f64::from(theta[hidden * d + j]) - shift) as f32);
        w1.push(row);
    }
    let w2 = theta[hidden * d + hidden..size - 1].to_vec();
    Mlp { w1, b1, w2, b2: theta[size - 1] }
}

/// Mean and standard deviation of each dimension over the rows.
fn standardisation(xs: &[&[f32]]) -> (Vec<f64>, Vec<f64>) {
    let n = xs.len().max(1) as f64;
    let d = xs.first().map_or(0, |x| x.len());
    let mut mean = vec![0.0; d];
    let mut sd = vec![0.0; d];
    for x in xs {
        for (m, v) in mean.iter_mut().zip(*x) {
            *m += f64::from(*v) / n;
        }
    }
    for x in xs {
        for ((s, m), v) in sd.iter_mut().zip(&mean).zip(*x) {
            *s += (f64::from(*v) - m).powi(2) / n;
        }
    }
    sd.iter_mut().for_each(|s| *s = s.sqrt().max(1e-6));
    (mean, sd)
}

/// A linear model over the raw embedding: p = σ(w·x + b).
pub(super) struct Linear {
    pub w: Vec<f64>,
    pub b: f64,
}

impl Linear {
    pub fn probability(&self, x: &[f32]) -> f64 {
        let z: f64 = self.w.iter().zip(x).map(|(w, x)| w * f64::from(*x)).sum::<f64>() + self.b;
        1.0 / (1.0 + (-z).exp())
    }
}

/// Fits on `xs` (rows of equal length) labelled `ys`, each class weighted
/// to half the total, with penalty `l2` on the standardised weights (the
/// bias is not penalised).
pub(super) fn fit(xs: &[&[f32]], ys: &[bool], l2: f64) -> Linear {
    let n = xs.len();
    let d = xs.first().map_or(0, |x| x.len());
    let positives = ys.iter().filter(|y| **y).count().max(1);
    let negatives = (n - ys.iter().filter(|y| **y).count()).max(1);
    let (cp, cn) = (n as f64 / (2.0 * positives as f64), n as f64 / (2.0 * negatives as f64));
    let c: Vec<f64> = ys.iter().map(|y| if *y { cp } else { cn }).collect();

    // Standardise each dimension over the rows fitted on.
    let (mean, sd) = standardisation(xs);
    // Rows with a trailing 1 for the bias.
    let z: Vec<Vec<f64>> =
        xs.iter().map(|x| x.iter().zip(&mean).zip(&sd).map(|((v, m), s)| (f64::from(*v) - m) / s).chain([1.0]).collect()).collect();
    let k = d + 1;
    let mut beta = vec![0.0; k];
    let loss = |beta: &[f64]| -> f64 {
        let mut l = 0.5 * l2 * beta[..d].iter().map(|b| b * b).sum::<f64>();
        for ((row, y), ci) in z.iter().zip(ys).zip(&c) {
            let s: f64 = row.iter().zip(beta).map(|(a, b)| a * b).sum();
            // log(1 + e^s) - y·s, stably.
            let softplus = if s > 0.0 { s + (-s).exp().ln_1p() } else { s.exp().ln_1p() };
            l += ci * (softplus - if *y { s } else { 0.0 });
        }
        l
    };
    let mut current = loss(&beta);
    for _ in 0..30 {
        let mut grad = vec![0.0; k];
        let mut hess = vec![0.0; k * k];
        for ((row, y), ci) in z.iter().zip(ys).zip(&c) {
            let s: f64 = row.iter().zip(&beta).map(|(a, b)| a * b).sum();
            let p = 1.0 / (1.0 + (-s).exp());
            let r = ci * (p - if *y { 1.0 } else { 0.0 });
            let h = ci * p * (1.0 - p);
            for (i, a) in row.iter().enumerate() {
                grad[i] += r * a;
                let ha = h * a;
                let line = &mut hess[i * k..i * k + i + 1];
                for (cell, b) in line.iter_mut().zip(&row[..=i]) {
                    *cell += ha * b;
                }
            }
        }
        for i in 0..d {
            grad[i] += l2 * beta[i];
            hess[i * k + i] += l2;
        }
        hess[k * k - 1] += 1e-9;
        let Some(step) = cholesky_solve(&mut hess, &grad, k) else { break };
        // Halve the step until the loss goes down.
        let mut t = 1.0;
        let mut improved = false;
        for _ in 0..20 {
            let next: Vec<f64> = beta.iter().zip(&step).map(|(b, s)| b - t * s).collect();
            let l = loss(&next);
            if l < current {
                let gain = current - l;
                beta = next;
                current = l;
                improved = gain > 1e-9 * current.abs().max(1.0);
                break;
            }
            t *= 0.5;
        }
        if !improved {
            break;
        }
    }
    // Back to the raw embedding: w_j = β_j / sd_j, b = β_bias − Σ β_j m_j / sd_j.
    let w: Vec<f64> = beta[..d].iter().zip(&sd).map(|(b, s)| b / s).collect();
    let b = beta[d] - w.iter().zip(&mean).map(|(w, m)| w * m).sum::<f64>();
    Linear { w, b }
}

/// Solves H x = g for a symmetric positive definite H whose lower triangle
/// (row-major, k × k) is filled; H is overwritten by its Cholesky factor.
fn cholesky_solve(h: &mut [f64], g: &[f64], k: usize) -> Option<Vec<f64>> {
    for j in 0..k {
        let mut diag = h[j * k + j];
        for p in 0..j {
            diag -= h[j * k + p] * h[j * k + p];
        }
        if diag <= 0.0 || !diag.is_finite() {
            return None;
        }
        let diag = diag.sqrt();
        h[j * k + j] = diag;
        for i in j + 1..k {
            let mut v = h[i * k + j];
            for p in 0..j {
                v -= h[i * k + p] * h[j * k + p];
            }
            h[i * k + j] = v / diag;
        }
    }
    let mut y = vec![0.0; k];
    for i in 0..k {
        let s: f64 = (0..i).map(|p| h[i * k + p] * y[p]).sum();
        y[i] = (g[i] - s) / h[i * k + i];
    }
    let mut x = vec![0.0; k];
    for i in (0..k).rev() {
        let s: f64 = (i + 1..k).map(|p| h[p * k + i] * x[p]).sum();
        x[i] = (y[i] - s) / h[i * k + i];
    }
    Some(x)
}

/// The fold of a group: FNV-1a of its name, so an attack, its translation
/// and its folded form (one group) are always held out together.
pub(super) fn fold_of(group: &str, folds: usize) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in group.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % folds.max(1) as u64) as usize
}

/// Out-of-fold probabilities: each row scored by a model fitted on the
/// other folds.
pub(super) fn out_of_fold(xs: &[&[f32]], ys: &[bool], fold: &[usize], folds: usize, spec: Spec) -> Vec<f64> {
    let mut p = vec![0.0; xs.len()];
    for f in 0..folds {
        let train: Vec<usize> = (0..xs.len()).filter(|i| fold[*i] != f).collect();
        let tx: Vec<&[f32]> = train.iter().map(|i| xs[*i]).collect();
        let ty: Vec<bool> = train.iter().map(|i| ys[*i]).collect();
        let model = spec.fit(&tx, &ty);
        for i in (0..xs.len()).filter(|i| fold[*i] == f) {
            p[i] = model.probability(xs[i]);
        }
    }
    p
}

/// The lowest threshold (flag when p ≥ t) at which at most `max_share` of
/// each language's ordinary rows are flagged: just above the
/// (⌊max_share·n⌋+1)-th highest ordinary probability, the highest over
/// languages.
pub(super) fn threshold(p: &[f64], ys: &[bool], langs: &[&str], max_share: f64) -> f64 {
    let mut t: f64 = 0.0;
    let mut seen: Vec<&str> = langs.to_vec();
    seen.sort_unstable();
    seen.dedup();
    for lang in seen {
        let mut o: Vec<f64> = (0..p.len()).filter(|i| !ys[*i] && langs[*i] == lang).map(|i| p[i]).collect();
        o.sort_by(|a, b| b.total_cmp(a));
        let allowed = (max_share * o.len() as f64).floor() as usize;
        if let Some(v) = o.get(allowed) {
            t = t.max(v + 1e-9);
        }
    }
    t.clamp(1e-6, 1.0 - 1e-6)
}

/// Held-out figures of one fit, for the choice's log: injections flagged
/// per language at a few false-flag shares, then per class of injection
/// (the category's first part) at threshold `t`.
pub(super) fn describe(p: &[f64], ys: &[bool], langs: &[&str], classes: &[&str], t: f64) -> String {
    let mut out = String::new();
    for share in [0.005, 0.01, 0.02, 0.05] {
        let ts = threshold(p, ys, langs, share);
        let per: Vec<String> = ["vi", "en"]
            .iter()
            .map(|l| {
                let idx: Vec<usize> = (0..p.len()).filter(|i| ys[*i] && langs[*i] == *l).collect();
                let k = idx.iter().filter(|i| p[**i] >= ts).count();
                format!("{l} {k}/{}", idx.len())
            })
            .collect();
        out += &format!("    at most {:.1}% false flags per language: {}\n", 100.0 * share, per.join(", "));
    }
    let mut names: Vec<&str> = (0..p.len()).filter(|i| ys[*i]).map(|i| classes[i]).collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        let idx: Vec<usize> = (0..p.len()).filter(|i| ys[*i] && classes[*i] == name).collect();
        let k = idx.iter().filter(|i| p[**i] >= t).count();
        out += &format!("    {name:<24} {k}/{}\n", idx.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separates_a_separable_set_and_solves_exactly() {
        // Two clusters along the first dimension.
        let rows: Vec<Vec<f32>> =
            (0..40).map(|i| vec![if i % 2 == 0 { 1.0 } else { -1.0 } + (i as f32) * 0.001, (i % 7) as f32 * 0.1]).collect();
        let xs: Vec<&[f32]> = rows.iter().map(Vec::as_slice).collect();
        let ys: Vec<bool> = (0..40).map(|i| i % 2 == 0).collect();
        let m = fit(&xs, &ys, 1.0);
        assert!(xs.iter().zip(&ys).all(|(x, y)| (m.probability(x) > 0.5) == *y));
        let mut h = vec![4.0, 0.0, 2.0, 3.0];
        let x = cholesky_solve(&mut h, &[8.0, 7.0], 2).expect("positive definite");
        assert!((x[0] - 1.25).abs() < 1e-9 && (x[1] - 1.5).abs() < 1e-9);
    }

    #[test]
    fn the_threshold_keeps_false_flags_within_the_share() {
        let p = [0.9, 0.8, 0.7, 0.6, 0.95];
        let ys = [false, false, false, false, true];
        let langs = ["vi"; 5];
        let t = threshold(&p, &ys, &langs, 0.0);
        assert!(t > 0.9 && t < 0.95);
        let t = threshold(&p, &ys, &langs, 0.25);
        assert!(t > 0.8 && t < 0.9);
    }
}
