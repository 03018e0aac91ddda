//! The optimizers of ansel's trainers: AdamW with decoupled weight decay (none on biases
//! and LayerNorm), and RMSprop (the thesis' community-QA networks), whose moments are saved with
//! a checkpoint so that a resumed run continues exactly; plus gradient clipping and zeroing over named parameters, and atomic safetensors
//! files of named tensors.
//!
//! Parameters are `BTreeMap<String, Tensor>` (name -> leaf tensor): a transformer's own table,
//! or [`trainable`] of a `VarStore`. The step count is the caller's (it lives in the run state
//! beside the schedule position), so one optimizer serves several parameter groups at
//! different learning rates.

use crate::backend;
use ansel_model::{ModelError, Result};
use std::collections::BTreeMap;
use std::path::Path;
use tch::{nn, Kind, Tensor};

/// AdamW (Loshchilov & Hutter): Adam moments, weight decay applied to the weights directly.
/// With `weight_decay` 0 a step is Adam's.
pub struct AdamW {
    m: BTreeMap<String, Tensor>,
    v: BTreeMap<String, Tensor>,
}

/// Whether a parameter is exempt from weight decay (biases and LayerNorm, as in BERT).
pub fn no_decay(name: &str) -> bool {
    name.ends_with(".bias") || name.contains("LayerNorm")
}

impl AdamW {
    pub const B1: f64 = 0.9;
    pub const B2: f64 = 0.999;
    pub const EPS: f64 = 1e-8;

    /// Zero moments for every parameter of `params`.
    pub fn new(params: &BTreeMap<String, Tensor>) -> AdamW {
        let zeros = || {
            params
                .iter()
                .map(|(n, p)| (n.clone(), p.zeros_like().detach()))
                .collect()
        };
        AdamW {
            m: zeros(),
            v: zeros(),
        }
    }

    /// One step at learning rate `lr` with decoupled weight decay `wd` (none for
    /// [`no_decay`] names); `step` counts from 1 (bias correction). Parameters without a
    /// gradient, or unknown to this optimizer, are left alone.
    pub fn step(&mut self, params: &BTreeMap<String, Tensor>, lr: f64, wd: f64, step: usize) {
        let bc1 = 1.0 - Self::B1.powi(step as i32);
        let bc2 = 1.0 - Self::B2.powi(step as i32);
        tch::no_grad(|| {
            for (name, p) in params {
                let g = p.grad();
                if !g.defined() {
                    continue;
                }
                let (Some(m), Some(v)) = (self.m.get_mut(name), self.v.get_mut(name)) else {
                    continue;
                };
                let _ = m.g_mul_scalar_(Self::B1);
                let _ = m.g_add_(&(&g * (1.0 - Self::B1)));
                let _ = v.g_mul_scalar_(Self::B2);
                let _ = v.g_add_(&(&g * &g * (1.0 - Self::B2)));
                let mut p = p.shallow_clone();
                if wd > 0.0 && !no_decay(name) {
                    let _ = p.g_mul_scalar_(1.0 - lr * wd);
                }
                let denom = (&*v / bc2).sqrt() + Self::EPS;
                let update = (&*m / bc1) / denom * lr;
                let _ = p.g_sub_(&update);
            }
        });
    }

    /// Writes the moments (`m.<name>`, `v.<name>`, fp32) as safetensors, atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        let mut all: Vec<(String, Tensor)> = Vec::new();
        for (n, t) in &self.m {
            all.push((format!("m.{n}"), t.shallow_clone()));
        }
        for (n, t) in &self.v {
            all.push((format!("v.{n}"), t.shallow_clone()));
        }
        write_tensors(path, &all)
    }

    /// Reads moments written by [`AdamW::save`]; every parameter's pair must be there, with
    /// its shape.
    pub fn load(&mut self, path: &Path) -> Result<()> {
        let found = read_tensors(path)?;
        for (prefix, map) in [("m", &mut self.m), ("v", &mut self.v)] {
            for (n, t) in map.iter_mut() {
                *t = expect_tensor(&found, path, &format!("{prefix}.{n}"), &t.size())?
                    .to_kind(Kind::Float);
            }
        }
        Ok(())
    }
}

/// RMSprop (Tieleman & Hinton), as Keras and PyTorch define it: a running mean of squared
/// gradients (decay `RHO`) divides each step.
pub struct RmsProp {
    square: BTreeMap<String, Tensor>,
}

impl RmsProp {
    pub const RHO: f64 = 0.9;
    pub const EPS: f64 = 1e-7;

    pub fn new(params: &BTreeMap<String, Tensor>) -> RmsProp {
        RmsProp {
            square: params
                .iter()
                .map(|(n, p)| (n.clone(), p.zeros_like().detach()))
                .collect(),
        }
    }

    /// One step at learning rate `lr`; parameters without a gradient are left alone.
    pub fn step(&mut self, params: &BTreeMap<String, Tensor>, lr: f64) {
        tch::no_grad(|| {
            for (name, p) in params {
                let g = p.grad();
                let Some(sq) = self.square.get_mut(name).filter(|_| g.defined()) else {
                    continue;
                };
                let _ = sq.g_mul_scalar_(Self::RHO);
                let _ = sq.g_add_(&(&g * &g * (1.0 - Self::RHO)));
                let update = &g / (sq.sqrt() + Self::EPS) * lr;
                let _ = p.shallow_clone().g_sub_(&update);
            }
        });
    }

    /// Writes the running means (`sq.<name>`) as safetensors, atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        let all: Vec<(String, Tensor)> = self
            .square
            .iter()
            .map(|(n, t)| (format!("sq.{n}"), t.shallow_clone()))
            .collect();
        write_tensors(path, &all)
    }

    /// Reads what [`RmsProp::save`] wrote; every parameter's mean must be there, with its shape.
    pub fn load(&mut self, path: &Path) -> Result<()> {
        let found = read_tensors(path)?;
        for (n, t) in self.square.iter_mut() {
            *t = expect_tensor(&found, path, &format!("sq.{n}"), &t.size())?.to_kind(Kind::Float);
        }
        Ok(())
    }
}

/// How many trainable numbers `vs` holds (frozen tables, such as static embeddings, not counted).
pub fn parameter_count(vs: &nn::VarStore) -> usize {
    vs.trainable_variables().iter().map(Tensor::numel).sum()
}

/// The trainable variables of `vs` by name (those requiring gradients).
pub fn trainable(vs: &nn::VarStore) -> BTreeMap<String, Tensor> {
    vs.variables()
        .into_iter()
        .filter(|(_, t)| t.requires_grad())
        .collect()
}

/// Scales gradients so that their global L2 norm is at most `max_norm` (0: no clipping);
/// returns the norm before clipping.
pub fn clip_gradients(params: &BTreeMap<String, Tensor>, max_norm: f64) -> f64 {
    tch::no_grad(|| {
        let grads: Vec<Tensor> = params
            .values()
            .map(|p| p.grad())
            .filter(|g| g.defined())
            .collect();
        let total: f64 = grads
            .iter()
            .map(|g| g.square().sum(Kind::Float).double_value(&[]))
            .sum::<f64>()
            .sqrt();
        if max_norm > 0.0 && total > max_norm {
            let scale = max_norm / (total + 1e-6);
            for mut g in grads {
                let _ = g.g_mul_scalar_(scale);
            }
        }
        total
    })
}

/// Sets every parameter's gradient to zero.
pub fn zero_gradients(params: &BTreeMap<String, Tensor>) {
    for p in params.values() {
        let mut p = p.shallow_clone();
        p.zero_grad();
    }
}

/// Writes named tensors as safetensors, atomically (temporary file, fsync, rename).
pub fn write_tensors(path: &Path, tensors: &[(String, Tensor)]) -> Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".tmp-{}-{name}", std::process::id()));
    Tensor::write_safetensors(tensors, &tmp).map_err(backend)?;
    std::fs::File::open(&tmp)
        .and_then(|f| f.sync_all())
        .map_err(|e| ModelError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| ModelError::io(path, e))
}

/// Reads a safetensors file into a name -> tensor map.
pub fn read_tensors(path: &Path) -> Result<BTreeMap<String, Tensor>> {
    if !path.is_file() {
        return Err(ModelError::io(
            path,
            std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
        ));
    }
    let file = Tensor::read_safetensors(path).map_err(|e| ModelError::Format {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    Ok(file.into_iter().collect())
}

/// The tensor `name` of the weights file at `path` (whose tensors are `found`), which must
/// have `shape`; otherwise an error naming the file and the tensor.
pub fn expect_tensor<'a>(
    found: &'a BTreeMap<String, Tensor>,
    path: &Path,
    name: &str,
    shape: &[i64],
) -> Result<&'a Tensor> {
    let bad = |message: String| ModelError::Format {
        path: path.to_path_buf(),
        message,
    };
    let t = found
        .get(name)
        .ok_or_else(|| bad(format!("tensor `{name}` is missing")))?;
    if t.size() != shape {
        return Err(bad(format!(
            "tensor `{name}` has shape {:?}, expected {shape:?}",
            t.size()
        )));
    }
    Ok(t)
}

/// Copies the tensors of the weights file at `path` (whose tensors are `found`) into the
/// parameters of the same names, without gradient. Every parameter must be there with its
/// shape; they are all checked before any is written, so an error leaves `params` as they were.
pub fn copy_into(
    params: &BTreeMap<String, Tensor>,
    found: &BTreeMap<String, Tensor>,
    path: &Path,
) -> Result<()> {
    for (name, p) in params {
        expect_tensor(found, path, name, &p.size())?;
    }
    tch::no_grad(|| {
        for (name, p) in params {
            p.shallow_clone().copy_(&found[name]);
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Device;

    fn params() -> BTreeMap<String, Tensor> {
        let mk = |v: &[f32]| Tensor::from_slice(v).set_requires_grad(true);
        BTreeMap::from([
            ("lin.weight".to_string(), mk(&[1.0, -2.0, 3.0])),
            ("lin.bias".to_string(), mk(&[0.5])),
        ])
    }

    /// Loss sum(w^2) + sum(b^2): gradients 2w and 2b.
    fn backward(params: &BTreeMap<String, Tensor>) {
        let loss = params
            .values()
            .map(|p| p.square().sum(Kind::Float))
            .fold(Tensor::zeros([], (Kind::Float, Device::Cpu)), |a, b| a + b);
        loss.backward();
    }

    fn values(t: &Tensor) -> Vec<f32> {
        Vec::<f32>::try_from(t.detach()).unwrap()
    }

    #[test]
    fn first_step_moves_each_weight_by_lr_against_its_gradient_and_decays_only_weights() {
        let p = params();
        let mut opt = AdamW::new(&p);
        backward(&p);
        // Step 1: m/bc1 = g, v/bc2 = g^2, so the update is lr * sign(g) (up to eps).
        opt.step(&p, 0.1, 0.5, 1);
        let w = values(&p["lin.weight"]);
        let expect = [1.0 * 0.95 - 0.1, -2.0 * 0.95 + 0.1, 3.0 * 0.95 - 0.1];
        for (a, b) in w.iter().zip(expect) {
            assert!((a - b).abs() < 1e-5, "{w:?} vs {expect:?}");
        }
        // The bias is not decayed.
        assert!((values(&p["lin.bias"])[0] - 0.4).abs() < 1e-5);
    }

    #[test]
    fn rmsprop_steps_by_the_running_mean_and_resumes_from_its_file() {
        let p = params();
        let mut opt = RmsProp::new(&p);
        backward(&p);
        // Step 1: sq = 0.1 g^2, so the update is lr * g / sqrt(0.1 g^2) = lr / sqrt(0.1) sign(g).
        opt.step(&p, 0.01);
        let w = values(&p["lin.weight"]);
        let d = 0.01 / 0.1f32.sqrt();
        for (a, b) in w.iter().zip([1.0 - d, -2.0 + d, 3.0 - d]) {
            assert!((a - b).abs() < 1e-5, "{w:?}");
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rms.safetensors");
        opt.save(&path).unwrap();
        let mut again = RmsProp::new(&p);
        again.load(&path).unwrap();
        let sq = |o: &RmsProp| values(&o.square["lin.weight"]);
        assert_eq!(sq(&opt), sq(&again));
        assert!(sq(&again).iter().all(|x| *x > 0.0));
    }

    #[test]
    fn saved_moments_continue_exactly_and_fresh_moments_do_not() {
        let run = |restore: Option<&str>| {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("opt.safetensors");
            let p = params();
            let mut opt = AdamW::new(&p);
            for step in 1..=2 {
                zero_gradients(&p);
                backward(&p);
                opt.step(&p, 0.05, 0.01, step);
            }
            if let Some(how) = restore {
                opt.save(&path).unwrap();
                opt = AdamW::new(&p);
                if how == "load" {
                    opt.load(&path).unwrap();
                }
            }
            for step in 3..=5 {
                zero_gradients(&p);
                backward(&p);
                opt.step(&p, 0.05, 0.01, step);
            }
            values(&p["lin.weight"])
        };
        let straight = run(None);
        assert_eq!(straight, run(Some("load")));
        let fresh = run(Some("fresh"));
        let gap = straight
            .iter()
            .zip(&fresh)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(gap > 1e-3, "fresh moments should change the result ({gap})");
    }

    #[test]
    fn without_weight_decay_it_follows_libtorchs_adam() {
        // The efficient models trained with tch's nn::Adam (libtorch's C++ Adam) before they
        // switched to this optimizer: the same update, up to the order of float operations.
        use tch::nn::{Module, OptimizerConfig};
        // Deterministic data and start (other tests share libtorch's RNG).
        let grid =
            |n: i64, scale: f64| (Tensor::arange(n, (Kind::Float, Device::Cpu)) * scale).sin();
        let start = grid(12, 0.7).view([3, 4]);
        let run = |ours: bool| {
            let vs = nn::VarStore::new(Device::Cpu);
            let lin = nn::linear(vs.root() / "lin", 4, 3, Default::default());
            tch::no_grad(|| {
                lin.ws.shallow_clone().copy_(&start);
                if let Some(bs) = &lin.bs {
                    bs.shallow_clone().copy_(&grid(3, 2.1));
                }
            });
            let x = grid(32, 1.3).view([8, 4]);
            let y = grid(24, 0.4).view([8, 3]);
            let params = trainable(&vs);
            let mut adam = AdamW::new(&params);
            let mut theirs = nn::Adam::default().build(&vs, 0.01).unwrap();
            for step in 1..=30 {
                let loss = (lin.forward(&x) - &y).square().mean(Kind::Float);
                let lr = 0.01 / step as f64;
                if ours {
                    zero_gradients(&params);
                    loss.backward();
                    adam.step(&params, lr, 0.0, step);
                } else {
                    theirs.set_lr(lr);
                    theirs.backward_step(&loss);
                }
            }
            values(&lin.ws.view([-1]))
        };
        let (a, b) = (run(true), run(false));
        let gap = a
            .iter()
            .zip(&b)
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max);
        assert!(gap < 1e-5, "{gap}");
        let moved = a
            .iter()
            .zip(values(&start.view([-1])))
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max);
        assert!(moved > 0.01, "the weights moved: {moved}");
    }

    #[test]
    fn copy_into_casts_saved_tensors_and_leaves_params_untouched_when_one_is_bad() {
        let path = Path::new("w.safetensors");
        let p = params();
        let half = |v: &[f32]| Tensor::from_slice(v).to_kind(Kind::Half);
        let mut found = BTreeMap::from([
            ("lin.weight".to_string(), half(&[4.0, 5.0, 6.0])),
            ("lin.bias".to_string(), half(&[7.0, 8.0])),
        ]);
        let err = copy_into(&p, &found, path).unwrap_err().to_string();
        assert!(err.contains("lin.bias") && err.contains("[2]"), "{err}");
        assert_eq!(values(&p["lin.weight"]), vec![1.0, -2.0, 3.0]);
        found.insert("lin.bias".into(), half(&[7.0]));
        copy_into(&p, &found, path).unwrap();
        assert_eq!(values(&p["lin.weight"]), vec![4.0, 5.0, 6.0]);
        assert_eq!(p["lin.weight"].kind(), Kind::Float);
        assert!(p["lin.weight"].requires_grad());
        found.remove("lin.bias");
        let err = copy_into(&p, &found, path).unwrap_err().to_string();
        assert!(err.contains("`lin.bias` is missing") && err.contains("w.safetensors"));
    }

    #[test]
    fn loading_names_the_missing_or_misshapen_tensor() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("opt.safetensors");
        let p = params();
        AdamW::new(&p).save(&path).unwrap();
        let mut bigger = params();
        bigger.insert(
            "other.weight".into(),
            Tensor::zeros([2], (Kind::Float, Device::Cpu)),
        );
        let err = AdamW::new(&bigger).load(&path).unwrap_err().to_string();
        assert!(
            err.contains("m.other.weight") && err.contains("opt.safetensors"),
            "{err}"
        );
        let mut reshaped = params();
        reshaped.insert(
            "lin.bias".into(),
            Tensor::zeros([2], (Kind::Float, Device::Cpu)),
        );
        let err = AdamW::new(&reshaped).load(&path).unwrap_err().to_string();
        assert!(err.contains("m.lin.bias") && err.contains("shape"), "{err}");
        let err = AdamW::new(&p)
            .load(&dir.path().join("absent.safetensors"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("absent.safetensors"), "{err}");
    }

    #[test]
    fn clipping_caps_the_global_norm_and_trainable_skips_frozen_variables() {
        let p = params();
        backward(&p);
        // Gradients 2, -4, 6 and 1: norm sqrt(57).
        let norm = clip_gradients(&p, 1.0);
        assert!((norm - 57f64.sqrt()).abs() < 1e-4);
        assert!((clip_gradients(&p, 0.0) - 1.0).abs() < 1e-4);
        zero_gradients(&p);
        assert_eq!(clip_gradients(&p, 0.0), 0.0);

        let vs = nn::VarStore::new(Device::Cpu);
        let _lin = nn::linear(vs.root() / "lin", 3, 2, Default::default());
        let _frozen = vs.root().zeros_no_train("table", &[4, 3]);
        let names: Vec<String> = trainable(&vs).into_keys().collect();
        assert_eq!(names, vec!["lin.bias", "lin.weight"]);
    }
}
