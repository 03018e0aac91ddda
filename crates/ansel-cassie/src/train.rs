//! Training the CASSIE head on a frozen encoder's (cached) features.

use crate::features::WordMass;
use crate::head::{Head, HeadConfig, NodeBatch};
use crate::ot::{align, Alignment, OtOptions};
use crate::split::SplitFeatures;
use ansel_data::Question;
use ansel_eval::{evaluate, Filter, Report};
use ansel_model::train::EarlyStopping;
use ansel_model::Result;
use ansel_torch::tch::{self, nn, nn::OptimizerConfig, Device, Kind, Tensor};

/// Per-sentence inputs of a split after alignment; row `P` (the last) is the padding row.
pub struct NodeTable {
    pub ot_vec: Tensor,
    pub mean_vec: Tensor,
    pub pooled: Tensor,
    pub ot_cost: Tensor,
    pub mean_cost: Tensor,
    pub logit: Tensor,
}

/// A split ready for the head: one item per candidate.
pub struct Prepared {
    pub table: NodeTable,
    /// Pair index of each item's [candidate, previous, next] (`P` for padding).
    pub nodes: Vec<[i64; 3]>,
    pub labels: Vec<[f32; 3]>,
    pub known: Vec<[f32; 3]>,
    /// Candidates per question, in order (items are question-major).
    pub counts: Vec<usize>,
    pub questions: Vec<Question>,
    pub alignment: Alignment,
}

fn with_pad(t: &Tensor) -> Tensor {
    let mut shape = t.size();
    shape[0] = 1;
    Tensor::cat(
        &[
            t.shallow_clone(),
            t.new_zeros(shape.as_slice(), (Kind::Float, Device::Cpu)),
        ],
        0,
    )
}

impl Prepared {
    pub fn new(split: &SplitFeatures, mass: &WordMass, ot: &OtOptions) -> Prepared {
        // No gradient through the transport plan (`align` solves it on detached vectors);
        // with a live encoder the sentence vectors still carry gradient.
        let alignment = align(&split.pairs, mass, ot, 256);
        let p = split.pairs.len() as i64;
        let table = NodeTable {
            ot_vec: with_pad(&alignment.ot_vec),
            mean_vec: with_pad(&alignment.mean_vec),
            pooled: with_pad(&split.pairs.pooled),
            ot_cost: with_pad(&alignment.ot_cost),
            mean_cost: with_pad(&alignment.mean_cost),
            logit: with_pad(&split.pairs.logits.tensor()),
        };
        let mut nodes = Vec::new();
        let mut labels = Vec::new();
        let mut known = Vec::new();
        let mut counts = Vec::new();
        for (k, g) in split.graphs.iter().enumerate() {
            counts.push(g.nodes.len());
            for cand in 0..g.nodes.len() {
                let mut n = [p; 3];
                let mut l = [0f32; 3];
                let mut kn = [0f32; 3];
                for (slot, sentence) in g.nodes[cand].iter().enumerate() {
                    if let Some(j) = sentence {
                        n[slot] = (split.offsets[k] + j) as i64;
                        if let Some(label) = g.labels[*j] {
                            l[slot] = f32::from(u8::from(label));
                            kn[slot] = 1.0;
                        }
                    }
                }
                nodes.push(n);
                labels.push(l);
                known.push(kn);
            }
        }
        Prepared {
            table,
            nodes,
            labels,
            known,
            counts,
            questions: split.questions.clone(),
            alignment,
        }
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The inputs of items `ids` for a head built with `config`.
    pub fn batch(&self, ids: &[usize], config: &HeadConfig) -> NodeBatch {
        let b = ids.len() as i64;
        let flat: Vec<i64> = ids.iter().flat_map(|&i| self.nodes[i]).collect();
        let index = Tensor::from_slice(&flat);
        let pad = self.table.pooled.size()[0] - 1;
        let gather = |t: &Tensor| {
            let g = t.index_select(0, &index);
            let mut shape = vec![b, 3];
            shape.extend_from_slice(&t.size()[1..]);
            g.view(shape.as_slice())
        };
        let (vec, cost) = if config.ot {
            (&self.table.ot_vec, &self.table.ot_cost)
        } else {
            (&self.table.mean_vec, &self.table.mean_cost)
        };
        let rows = |v: &[[f32; 3]]| {
            let flat: Vec<f32> = ids.iter().flat_map(|&i| v[i]).collect();
            Tensor::from_slice(&flat).view([b, 3])
        };
        let real: Vec<f32> = flat
            .iter()
            .map(|&n| f32::from(u8::from(n != pad)))
            .collect();
        NodeBatch {
            vec: gather(vec),
            mean: gather(&self.table.mean_vec),
            pooled: gather(&self.table.pooled),
            cost: gather(cost),
            logit: gather(&self.table.logit),
            real: Tensor::from_slice(&real).view([b, 3]),
            labels: rows(&self.labels),
            known: rows(&self.known),
        }
    }

    /// Scores of every candidate, grouped by question.
    pub fn score(&self, head: &Head) -> Vec<Vec<f32>> {
        let mut flat = Vec::with_capacity(self.len());
        tch::no_grad(|| {
            let ids: Vec<usize> = (0..self.len()).collect();
            for chunk in ids.chunks(512) {
                let (logit, _) = head.forward(&self.batch(chunk, &head.config), false);
                flat.extend(
                    Vec::<f32>::try_from(&logit).unwrap_or_else(|_| vec![0.0; chunk.len()]),
                );
            }
        });
        let mut out = Vec::with_capacity(self.counts.len());
        let mut at = 0;
        for &c in &self.counts {
            out.push(flat[at..at + c].to_vec());
            at += c;
        }
        out
    }

    pub fn evaluate(&self, head: &Head) -> Report {
        evaluate(&self.questions, &self.score(head), Filter::Answered)
    }
}

/// Optimisation settings of the head.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct FitOptions {
    pub epochs: usize,
    pub patience: usize,
    pub lr: f64,
    pub weight_decay: f64,
    pub batch_size: usize,
    pub seed: u64,
}

impl Default for FitOptions {
    fn default() -> Self {
        FitOptions {
            epochs: 30,
            patience: 5,
            lr: 1e-3,
            weight_decay: 0.01,
            batch_size: 32,
            seed: 42,
        }
    }
}

/// A trained head and how training went.
pub struct Fitted {
    pub vs: nn::VarStore,
    pub head: Head,
    pub best_epoch: usize,
    pub epochs: usize,
    pub dev: Report,
}

/// Trains a head on `train`, keeping the weights of the epoch with the best dev MAP.
/// `log` receives one JSON object per epoch.
pub fn fit(
    config: HeadConfig,
    train: &Prepared,
    dev: &Prepared,
    opts: &FitOptions,
    log: &mut dyn FnMut(serde_json::Value) -> Result<()>,
) -> Result<Fitted> {
    tch::manual_seed(opts.seed as i64);
    let vs = nn::VarStore::new(Device::Cpu);
    let head = Head::new(&vs.root(), config);
    let mut opt = nn::AdamW {
        wd: opts.weight_decay,
        ..Default::default()
    }
    .build(&vs, opts.lr)
    .map_err(ansel_torch::backend)?;
    let mut stop = EarlyStopping::new(opts.patience);
    let mut best: Option<Vec<(String, Tensor)>> = None;
    let mut epochs = 0;
    for epoch in 1..=opts.epochs {
        epochs = epoch;
        let order = Tensor::randperm(train.len() as i64, (Kind::Int64, Device::Cpu));
        let order: Vec<i64> = Vec::try_from(&order).map_err(ansel_torch::backend)?;
        let order: Vec<usize> = order.into_iter().map(|i| i as usize).collect();
        let mut total = 0.0;
        let mut steps = 0;
        for chunk in order.chunks(opts.batch_size.max(1)) {
            let loss = head.loss(&train.batch(chunk, &head.config));
            opt.backward_step(&loss);
            total += f64::try_from(&loss).unwrap_or(f64::NAN);
            steps += 1;
        }
        let report = dev.evaluate(&head);
        let map = report.metric("MAP").unwrap_or(0.0);
        let improved = stop.observe(epoch, map);
        log(serde_json::json!({
            "epoch": epoch,
            "loss": total / steps.max(1) as f64,
            "dev MAP": map,
            "dev MRR": report.metric("MRR"),
            "dev P@1": report.metric("P@1"),
        }))?;
        if improved {
            best = Some(
                vs.variables()
                    .into_iter()
                    .map(|(n, t)| (n, t.detach().copy()))
                    .collect(),
            );
        }
        if stop.should_stop() {
            break;
        }
    }
    if let Some(best) = best {
        let vars = vs.variables();
        tch::no_grad(|| {
            for (name, value) in best {
                if let Some(v) = vars.get(&name) {
                    v.shallow_clone().copy_(&value);
                }
            }
        });
    }
    let dev_report = dev.evaluate(&head);
    Ok(Fitted {
        vs,
        head,
        best_epoch: stop.best_epoch.unwrap_or(epochs),
        epochs,
        dev: dev_report,
    })
}
