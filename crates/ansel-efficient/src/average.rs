//! Weight averaging while training: an exponential moving average (EMA) of the trainable
//! weights after every optimisation step, or the mean of the weights at the end of the last
//! N epochs. Dev MAP is measured, and the best model kept, with the averaged weights; the
//! optimizer goes on from the raw ones. The averager's state is saved with each checkpoint,
//! so a resumed run averages exactly as an uninterrupted one.

use ansel_model::Result;
use ansel_torch::tch::{self, Tensor};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::path::Path;

/// How (whether) the weights are averaged; recorded in the card's hyperparameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Averaging {
    /// The raw weights.
    #[default]
    None,
    /// After every step, `avg = decay * avg + (1 - decay) * weights` (starting from the
    /// initial weights); decay in [0, 1), 0 gives the last weights.
    Ema { decay: f64 },
    /// The mean of the weights at the end of the last N epochs (fewer while fewer are done).
    Epochs { last: usize },
}

impl Averaging {
    /// Checks the option's range: a clear error naming it.
    pub fn validate(self) -> std::result::Result<Self, String> {
        match self {
            Averaging::Ema { decay } if !(0.0..1.0).contains(&decay) => {
                Err(format!("--ema must be in [0, 1), not {decay}"))
            }
            Averaging::Epochs { last: 0 } => Err("--average-epochs must be at least 1".into()),
            ok => Ok(ok),
        }
    }
}

type Weights = BTreeMap<String, Tensor>;

fn copy(params: &Weights) -> Weights {
    params
        .iter()
        .map(|(n, t)| (n.clone(), t.detach().copy()))
        .collect()
}

/// The running average of a parameter set.
pub(crate) struct Averager {
    kind: Averaging,
    ema: Weights,
    epochs: VecDeque<Weights>,
}

impl Averager {
    /// Starts from `params` (the EMA's first value).
    pub fn new(kind: Averaging, params: &Weights) -> Averager {
        Averager {
            kind,
            ema: match kind {
                Averaging::Ema { .. } => copy(params),
                _ => Weights::new(),
            },
            epochs: VecDeque::new(),
        }
    }

    pub fn active(&self) -> bool {
        self.kind != Averaging::None
    }

    /// After an optimisation step.
    pub fn after_step(&mut self, params: &Weights) {
        if let Averaging::Ema { decay } = self.kind {
            tch::no_grad(|| {
                for (name, p) in params {
                    if let Some(avg) = self.ema.get_mut(name) {
                        let _ = avg.g_mul_scalar_(decay);
                        let _ = avg.g_add_(&(p.detach() * (1.0 - decay)));
                    }
                }
            });
        }
    }

    /// At the end of an epoch.
    pub fn after_epoch(&mut self, params: &Weights) {
        if let Averaging::Epochs { last } = self.kind {
            self.epochs.push_back(copy(params));
            while self.epochs.len() > last {
                self.epochs.pop_front();
            }
        }
    }

    /// The averaged weights (none without averaging, or before anything was averaged).
    pub fn averaged(&self) -> Option<Weights> {
        match self.kind {
            Averaging::None => None,
            Averaging::Ema { .. } => Some(copy(&self.ema)),
            Averaging::Epochs { .. } => {
                let first = self.epochs.front()?;
                let n = self.epochs.len() as f64;
                Some(
                    first
                        .keys()
                        .map(|name| {
                            let sum = self
                                .epochs
                                .iter()
                                .skip(1)
                                .fold(first[name].copy(), |acc, w| acc + &w[name]);
                            (name.clone(), sum / n)
                        })
                        .collect(),
                )
            }
        }
    }

    /// Saves the state (`ema.<name>` or `epoch<i>.<name>`) for a checkpoint.
    pub fn save(&self, path: &Path) -> Result<()> {
        let mut all: Vec<(String, Tensor)> = Vec::new();
        for (n, t) in &self.ema {
            all.push((format!("ema.{n}"), t.shallow_clone()));
        }
        for (i, w) in self.epochs.iter().enumerate() {
            for (n, t) in w {
                all.push((format!("epoch{i}.{n}"), t.shallow_clone()));
            }
        }
        ansel_torch::write_tensors(path, &all)
    }

    /// Restores a state written by [`Averager::save`] for the same parameters.
    pub fn load(&mut self, path: &Path, params: &Weights) -> Result<()> {
        let found = ansel_torch::read_tensors(path)?;
        let take = |key: String, like: &Tensor| -> Result<Tensor> {
            Ok(ansel_torch::expect_tensor(&found, path, &key, &like.size())?.shallow_clone())
        };
        match self.kind {
            Averaging::None => {}
            Averaging::Ema { .. } => {
                for (n, p) in params {
                    self.ema.insert(n.clone(), take(format!("ema.{n}"), p)?);
                }
            }
            Averaging::Epochs { last } => {
                self.epochs.clear();
                for i in 0..last {
                    if !params
                        .keys()
                        .any(|n| found.contains_key(&format!("epoch{i}.{n}")))
                    {
                        break;
                    }
                    let mut w = Weights::new();
                    for (n, p) in params {
                        w.insert(n.clone(), take(format!("epoch{i}.{n}"), p)?);
                    }
                    self.epochs.push_back(w);
                }
            }
        }
        Ok(())
    }
}

/// Copies `weights` into the parameters of the same names (no gradient) and returns the
/// values they had.
pub(crate) fn swap_in(params: &Weights, weights: &Weights) -> Weights {
    let old = copy(params);
    tch::no_grad(|| {
        for (name, p) in params {
            if let Some(w) = weights.get(name) {
                let mut p = p.shallow_clone();
                p.copy_(w);
            }
        }
    });
    old
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(v: &[f32]) -> Weights {
        BTreeMap::from([("w".to_string(), Tensor::from_slice(v))])
    }

    fn values(w: &Weights) -> Vec<f32> {
        Vec::<f32>::try_from(&w["w"]).unwrap()
    }

    #[test]
    fn ema_with_decay_zero_is_the_last_weights_and_otherwise_a_moving_average() {
        let start = params(&[0.0, 0.0]);
        let mut zero = Averager::new(Averaging::Ema { decay: 0.0 }, &start);
        let mut half = Averager::new(Averaging::Ema { decay: 0.5 }, &start);
        for step in [params(&[2.0, 4.0]), params(&[4.0, -4.0])] {
            zero.after_step(&step);
            half.after_step(&step);
        }
        assert_eq!(values(&zero.averaged().unwrap()), vec![4.0, -4.0]);
        // 0.5 * (0.5 * 0 + 0.5 * [2, 4]) + 0.5 * [4, -4] = [2.5, -1]
        assert_eq!(values(&half.averaged().unwrap()), vec![2.5, -1.0]);
    }

    #[test]
    fn averaging_identical_epochs_gives_the_checkpoint_and_only_the_last_n_count() {
        let w = params(&[1.5, -3.0]);
        let mut avg = Averager::new(Averaging::Epochs { last: 2 }, &w);
        assert!(avg.averaged().is_none());
        avg.after_epoch(&w);
        avg.after_epoch(&w);
        assert_eq!(values(&avg.averaged().unwrap()), vec![1.5, -3.0]);
        avg.after_epoch(&params(&[3.5, 1.0]));
        // The first epoch has left the window of 2: mean of [1.5, -3] and [3.5, 1].
        assert_eq!(values(&avg.averaged().unwrap()), vec![2.5, -1.0]);
    }

    #[test]
    fn a_saved_state_loads_back_and_a_missing_tensor_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("average.safetensors");
        let w = params(&[1.0, 2.0]);
        let mut avg = Averager::new(Averaging::Epochs { last: 3 }, &w);
        avg.after_epoch(&w);
        avg.after_epoch(&params(&[3.0, 4.0]));
        avg.save(&path).unwrap();
        let mut back = Averager::new(Averaging::Epochs { last: 3 }, &w);
        back.load(&path, &w).unwrap();
        assert_eq!(values(&back.averaged().unwrap()), vec![2.0, 3.0]);
        // An EMA state is not in an epochs file.
        let mut ema = Averager::new(Averaging::Ema { decay: 0.9 }, &w);
        let err = ema.load(&path, &w).unwrap_err().to_string();
        assert!(
            err.contains("ema.w") && err.contains("average.safetensors"),
            "{err}"
        );
    }

    #[test]
    fn swapping_in_replaces_the_values_and_returns_the_old_ones() {
        let p = BTreeMap::from([(
            "w".to_string(),
            Tensor::from_slice(&[1.0f32, 2.0]).set_requires_grad(true),
        )]);
        let old = swap_in(&p, &params(&[5.0, 6.0]));
        assert_eq!(values(&old), vec![1.0, 2.0]);
        assert_eq!(
            Vec::<f32>::try_from(&p["w"].detach()).unwrap(),
            vec![5.0, 6.0]
        );
        assert!(p["w"].requires_grad());
    }

    #[test]
    fn out_of_range_options_are_refused() {
        assert!(Averaging::Ema { decay: 1.0 }.validate().is_err());
        assert!(Averaging::Ema { decay: -0.1 }.validate().is_err());
        assert!(Averaging::Epochs { last: 0 }.validate().is_err());
        assert!(Averaging::Ema { decay: 0.99 }.validate().is_ok());
    }
}
