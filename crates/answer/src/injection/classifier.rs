//! Recognition by meaning (issue 61, item 2): a sentence addressed to the
//! reader-as-assistant is recognised from its embedding by the in-process
//! multilingual-e5-small encoder, whatever its words. A logistic model over
//! the embedding's dimensions (or over one hidden ReLU layer of them, when
//! the weights file has one), fitted on the development half of the
//! injection sets (`eval/injection/dev.tsv`) by `rag-dev eval injection
//! --fit`, which writes `classifier.json` beside this file; its threshold
//! was chosen on held-out folds of that half. Pure: no I/O beyond the
//! weights included at build time, no encoder here (the caller embeds the
//! sentence, with [`InstructionClassifier::prefix`] prepended, by the model
//! [`InstructionClassifier::model`] names).

use serde::{Deserialize, Serialize};

/// The weights shipped with the crate.
const EMBEDDED: &str = include_str!("classifier.json");

/// The prefixes multilingual-e5 was trained with.
const PREFIXES: &[&str] = &["query: ", "passage: "];

#[derive(Debug, thiserror::Error)]
pub enum ClassifierError {
    #[error("classifier weights are not valid JSON: {0}")]
    Format(#[from] serde_json::Error),
    #[error("classifier weights: {0}")]
    Shape(String),
}

/// How the weights were fitted (recorded, not used to classify).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fitting {
    /// Day of the fit (YYYY-MM-DD).
    pub date: String,
    /// The set fitted on, e.g. `eval/injection/dev.tsv`.
    pub set: String,
    /// The method, e.g. "logistic regression, L2, class-weighted, Newton".
    pub method: String,
    /// Rows of each label the final weights were fitted on.
    pub injections: usize,
    pub ordinary: usize,
    /// L2 penalty over the standardised dimensions (chosen on folds).
    pub l2: f64,
    /// Folds (grouped by the set's `group` column) the prefix, penalty and
    /// threshold were chosen on.
    pub folds: usize,
    /// The rule the threshold was chosen by.
    pub threshold_rule: String,
    /// Held-out (out-of-fold) figures on the set at that threshold, per
    /// language: share of injections and of ordinary rows flagged.
    #[serde(default)]
    pub held_out: Vec<HeldOut>,
}

/// Out-of-fold figures of one language on the set fitted on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldOut {
    pub lang: String,
    pub injections_flagged: f64,
    pub ordinary_flagged: f64,
}

/// A hidden layer: `relu(weights · embedding + bias)`, one row of the
/// embedding's length per unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HiddenLayer {
    pub weights: Vec<Vec<f32>>,
    pub bias: Vec<f32>,
}

/// The weights file as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassifierWeights {
    /// The encoder whose embeddings the weights read (`multilingual-e5-small`).
    pub model: String,
    /// Prepended to the sentence before embedding: "query: " or "passage: ".
    pub prefix: String,
    /// Length of the embedding.
    pub dimension: usize,
    /// Between the embedding and the output, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hidden: Option<HiddenLayer>,
    /// One weight per dimension of the L2-normalised embedding, or per
    /// unit of the hidden layer when there is one.
    pub weights: Vec<f32>,
    pub bias: f32,
    /// A sentence is flagged when its probability is at least this.
    pub threshold: f32,
    pub fitted: Fitting,
}

/// A sentence's embedding in, the chance it is written to the model out.
#[derive(Debug, Clone)]
pub struct InstructionClassifier {
    weights: ClassifierWeights,
}

impl InstructionClassifier {
    /// The weights shipped with the crate.
    pub fn embedded() -> Result<Self, ClassifierError> {
        Self::from_json(EMBEDDED)
    }

    /// Weights from a `classifier.json` text.
    pub fn from_json(text: &str) -> Result<Self, ClassifierError> {
        Self::from_weights(serde_json::from_str(text)?)
    }

    /// Checks the shape: one finite weight per dimension, a known prefix,
    /// a threshold strictly between 0 and 1.
    pub fn from_weights(weights: ClassifierWeights) -> Result<Self, ClassifierError> {
        let shape = |m: String| Err(ClassifierError::Shape(m));
        let inputs = match &weights.hidden {
            Some(h) => {
                if h.weights.len() != h.bias.len() || h.weights.iter().any(|row| row.len() != weights.dimension) {
                    return shape(format!("a hidden layer of {} rows, {} biases", h.weights.len(), h.bias.len()));
                }
                h.weights.len()
            }
            None => weights.dimension,
        };
        if weights.dimension == 0 || weights.weights.len() != inputs {
            return shape(format!("{} weights for {inputs} inputs", weights.weights.len()));
        }
        let hidden = weights.hidden.iter().flat_map(|h| h.weights.iter().flatten().chain(&h.bias));
        if !weights.weights.iter().chain(hidden).chain([&weights.bias, &weights.threshold]).all(|w| w.is_finite()) {
            return shape("a weight, a bias or the threshold is not finite".into());
        }
        if !(weights.threshold > 0.0 && weights.threshold < 1.0) {
            return shape(format!("threshold {} outside (0, 1)", weights.threshold));
        }
        if !PREFIXES.contains(&weights.prefix.as_str()) {
            return shape(format!("prefix {:?} (multilingual-e5 takes \"query: \" or \"passage: \")", weights.prefix));
        }
        Ok(InstructionClassifier { weights })
    }

    /// The probability that the sentence whose embedding this is was
    /// written to the model. An embedding of another length than
    /// [`Self::dimension`] (another encoder) gets 0: never flagged.
    pub fn probability(&self, embedding: &[f32]) -> f32 {
        if embedding.len() != self.weights.dimension {
            return 0.0;
        }
        let dot = |w: &[f32], x: &[f32]| w.iter().zip(x).map(|(w, x)| w * x).sum::<f32>();
        let z = match &self.weights.hidden {
            None => dot(&self.weights.weights, embedding),
            Some(h) => {
                let units = h.weights.iter().zip(&h.bias).map(|(row, b)| (dot(row, embedding) + b).max(0.0));
                units.zip(&self.weights.weights).map(|(u, w)| u * w).sum()
            }
        } + self.weights.bias;
        1.0 / (1.0 + (-z).exp())
    }

    /// Whether the sentence is taken for an instruction to the model.
    pub fn flags(&self, embedding: &[f32]) -> bool {
        self.probability(embedding) >= self.weights.threshold
    }

    /// What to prepend to the sentence before embedding it.
    pub fn prefix(&self) -> &str {
        &self.weights.prefix
    }

    /// The encoder the weights read.
    pub fn model(&self) -> &str {
        &self.weights.model
    }

    /// The embedding's length the weights read (tests check the shipped
    /// weights' shape against it).
    #[cfg(test)]
    pub fn dimension(&self) -> usize {
        self.weights.dimension
    }

    pub fn threshold(&self) -> f32 {
        self.weights.threshold
    }

    pub fn weights(&self) -> &ClassifierWeights {
        &self.weights
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_weights_load_with_their_shape() {
        let c = InstructionClassifier::embedded().expect("embedded weights load");
        assert_eq!(c.model(), "multilingual-e5-small");
        assert_eq!(c.dimension(), 384);
        assert!(PREFIXES.contains(&c.prefix()));
        assert!(c.threshold() > 0.0 && c.threshold() < 1.0);
        let f = &c.weights().fitted;
        assert_eq!(f.set, "eval/injection/dev.tsv", "fitted on the development half only");
        assert!(f.injections > 0 && f.ordinary > 0);
    }

    #[test]
    fn probabilities_are_probabilities_and_flags_follow_the_threshold() {
        let c = InstructionClassifier::embedded().expect("embedded weights load");
        let inputs = c.weights().hidden.as_ref().map_or(c.dimension(), |h| h.weights.len());
        assert_eq!(c.weights().weights.len(), inputs);
        let w: Vec<f32> = match &c.weights().hidden {
            // The direction of the output weights through the first layer.
            Some(h) => (0..c.dimension()).map(|i| h.weights.iter().zip(&c.weights().weights).map(|(r, o)| r[i] * o).sum()).collect(),
            None => c.weights().weights.clone(),
        };
        let norm = w.iter().map(|x| x * x).sum::<f32>().sqrt().max(f32::MIN_POSITIVE);
        // Unit vectors along and against the weights: the extremes.
        let along: Vec<f32> = w.iter().map(|x| x / norm).collect();
        let against: Vec<f32> = along.iter().map(|x| -x).collect();
        let (hi, lo) = (c.probability(&along), c.probability(&against));
        assert!((0.0..=1.0).contains(&hi) && (0.0..=1.0).contains(&lo));
        if c.weights().hidden.is_none() {
            assert!(hi >= lo);
        }
        assert_eq!(c.flags(&along), hi >= c.threshold());
        assert_eq!(c.probability(&[0.5; 3]), 0.0, "another encoder's embedding is never flagged");
    }

    #[test]
    fn malformed_weights_are_refused() {
        let mut w = InstructionClassifier::embedded().expect("embedded weights load").weights().clone();
        if let Some(h) = &w.hidden {
            let mut bad = w.clone();
            bad.hidden = Some(HiddenLayer { weights: h.weights[1..].to_vec(), bias: h.bias.clone() });
            assert!(InstructionClassifier::from_weights(bad).is_err());
        }
        w.weights.pop();
        assert!(matches!(InstructionClassifier::from_weights(w.clone()), Err(ClassifierError::Shape(_))));
        w.weights.push(f32::NAN);
        assert!(matches!(InstructionClassifier::from_weights(w.clone()), Err(ClassifierError::Shape(_))));
        w.weights.pop();
        w.weights.push(0.0);
        w.prefix = "search: ".into();
        assert!(InstructionClassifier::from_weights(w.clone()).is_err());
        w.prefix = "query: ".into();
        w.threshold = 1.5;
        assert!(InstructionClassifier::from_weights(w).is_err());
        assert!(matches!(InstructionClassifier::from_json("{"), Err(ClassifierError::Format(_))));
    }
}
