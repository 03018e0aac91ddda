//! `ansel train --model eqag`: EQAG-GNN over any base ranker (its loader is
//! `ansel::models::eqag`; `ansel-lab eqag-latency` times its stages).

use super::train::TrainArgs;
use ansel::models::eqag::{base_ranker, node_ranker};
use ansel_data::Question;
use ansel_efficient::{Architecture, EfficientRanker, TrainOptions};
use ansel_graph::oof::{oof_key, out_of_fold, FixedScores};
use ansel_graph::search::QuestionEncoder;
use ansel_graph::{
    build, fit, relative_path, ClsEncoder, Extras, Feature, FitOptions, GraphParams, InterBy,
    NodeVec, Prepared, ScoreCache, Variant,
};
use ansel_model::{ModelCard, Ranker, TrainingRecord};
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Options of `--model eqag` (the base ranker is `--base`).
#[derive(Args)]
pub struct EqagArgs {
    /// Inter-row edges reach: all training answers (ta), positives (t+), or positives to the
    /// top and negatives to the bottom nodes (t+-).
    #[arg(long, default_value = "t+", value_parser = clap::builder::PossibleValuesParser::new(Variant::NAMES))]
    pub variant: String,
    #[arg(long, default_value_t = 5)]
    pub k_intra: usize,
    #[arg(long, default_value_t = 0.7)]
    pub th_intra: f32,
    /// Most similar training questions whose answers may be joined.
    #[arg(long, default_value_t = 5)]
    pub k_rows: usize,
    #[arg(long, default_value_t = 10)]
    pub k_inter: usize,
    #[arg(long, default_value_t = 0.9)]
    pub th_inter: f32,
    /// Eq. 2 exactly: no separate weight for a node's own feature (default: one).
    #[arg(long)]
    pub no_root: bool,
    /// Inter-row edges: `row` (the paper: the best-scored answers of similar questions, to every
    /// top node) or `answer` (each top node to the answers most similar to its own).
    #[arg(long, default_value = "row", value_parser = ["row", "answer"])]
    pub inter_by: String,
    /// File caching bi-encoder vectors of questions and answers across runs (created if absent).
    #[arg(long)]
    pub vector_cache: Option<PathBuf>,
    /// Base score to node feature: sigmoid (logits), minmax (per question) or raw.
    #[arg(long, default_value = "sigmoid")]
    pub feature: String,
    /// Extension: fit the GCN on the even-numbered dev questions joined to the training graph
    /// and stop early / pick the sweep's setting on the odd-numbered ones (not the paper).
    #[arg(long)]
    pub fit_on_dev: bool,
    /// Extension (not the paper): extra node features after the base feature, comma-separated,
    /// each z-scored within the question: `base` (the base scores), `cos` (bi-encoder
    /// question-candidate cosine), `wo`, `wo-rr`, `rr` (lexical rankers; `rr` and `wo-rr` need
    /// document order, as in WikiQA); and `pair-vec` or `pair-vec:N` (N columns, default 16:
    /// the bi-encoder pair vector [q*a ; |q-a|] on the first N principal axes of the training
    /// nodes' pair vectors, whitened; the PCA is stored in the model directory); and
    /// `cls-vec` or `cls-vec:N` (the same for the base cross-encoder's last-layer [CLS] state of
    /// each pair; the base must be a cross-encoder model directory).
    #[arg(long, value_delimiter = ',')]
    pub node_features: Vec<String>,
    /// File caching the base cross-encoder's [CLS] states across runs (`cls-vec`; created if
    /// absent; keyed by the base's card and each pair's tokens).
    #[arg(long)]
    pub cls_cache: Option<PathBuf>,
    /// RI sanity check: random node features in [0, 1) instead of base scores.
    #[arg(long)]
    pub random_init: bool,
    /// `ansel rank --model BASE` outputs to take base scores from (repeatable); the outputs of
    /// the base's fp32 ONNX export (`ansel quantize --precision fp32`) count as the base's.
    #[arg(long)]
    pub base_cache: Vec<PathBuf>,
    /// Question-question bi-encoder (Hugging Face directory; mean pooling, cosine).
    #[arg(long, default_value = "vendor/models/all-minilm-l6-v2")]
    pub qq_encoder: PathBuf,
    /// Train every configuration of the dev grid (K_intra x th_intra x K_inter x th_inter),
    /// write one JSON line each to this file, and keep the best on dev MAP.
    #[arg(long)]
    pub sweep: Option<PathBuf>,
    /// The sweep's K_intra values (comma-separated; default 1,2,3,5).
    #[arg(long, value_delimiter = ',')]
    pub sweep_k_intra: Vec<usize>,
    /// The sweep's th_intra values (default 0,0.5,0.7).
    #[arg(long, value_delimiter = ',')]
    pub sweep_th_intra: Vec<f32>,
    /// The sweep's K_inter values (default 3,10).
    #[arg(long, value_delimiter = ',')]
    pub sweep_k_inter: Vec<usize>,
    /// The sweep's th_inter values (default 0,0.5,0.9).
    #[arg(long, value_delimiter = ',')]
    pub sweep_th_inter: Vec<f32>,
    /// Extension (not the paper): give the training rows out-of-fold base scores. The
    /// training questions are dealt into K folds (`--oof-folds` alone: 5) and each fold is
    /// scored by the base's family retrained with the base's recorded recipe on the other
    /// folds (efficient rankers only; a built-in untrained ranker's own scores are already
    /// out of sample). Unseen questions are still scored by the full base ranker.
    #[arg(long, num_args = 0..=1, default_missing_value = "5", conflicts_with = "train_scores")]
    pub oof_folds: Option<usize>,
    /// Seed of the fold assignment (kept apart from --seed so that GCN seeds share the folds).
    #[arg(long, default_value_t = 42)]
    pub oof_seed: u64,
    /// Where out-of-fold scores and fold rankers are cached (default: `oof-cache` beside --out).
    #[arg(long)]
    pub oof_cache: Option<PathBuf>,
    /// Extension (not the paper): inter-row edges carry messages from training answers to a
    /// row's nodes only, so that a training node's neighbourhood does not give its label away
    /// (T+ joins rows to positives only).
    #[arg(long)]
    pub directed_inter: bool,
    /// Extension: the training rows' base scores from this file (`ansel rank` JSON lines),
    /// e.g. out-of-fold scores of a cross-encoder computed elsewhere; every training question
    /// must be in it.
    #[arg(long)]
    pub train_scores: Option<PathBuf>,
}

/// The sweep's grid points (each list: the option's values, or the default grid's).
fn grid(base: GraphParams, e: &EqagArgs) -> Vec<GraphParams> {
    fn or<T: Copy>(given: &[T], default: &[T]) -> Vec<T> {
        if given.is_empty() { default } else { given }.to_vec()
    }
    let mut out = Vec::new();
    for &k_intra in &or(&e.sweep_k_intra, &[1, 2, 3, 5]) {
        for &th_intra in &or(&e.sweep_th_intra, &[0.0, 0.5, 0.7]) {
            for &k_inter in &or(&e.sweep_k_inter, &[3, 10]) {
                for &th_inter in &or(&e.sweep_th_inter, &[0.0, 0.5, 0.9]) {
                    out.push(GraphParams {
                        k_intra,
                        th_intra,
                        k_inter,
                        th_inter,
                        ..base
                    });
                }
            }
        }
    }
    out
}

pub fn train(args: &TrainArgs) -> Result<()> {
    let e = &args.eqag;
    let Some(base_spec) = args.cross_encoder.base.as_deref() else {
        bail!("--model eqag needs --base MODEL (a model directory or a built-in model name)")
    };
    let variant = Variant::parse(&e.variant).ok_or_else(|| anyhow!("unknown --variant"))?;
    let feature = Feature::parse(&e.feature).ok_or_else(|| {
        anyhow!(
            "--feature must be sigmoid, minmax or raw, not {:?}",
            e.feature
        )
    })?;
    ansel_torch_threads(args.threads, args.seed);
    let (mut train_qs, dev_qs) = args.read_splits()?;
    // Every training question, answered or not: what fold rankers train on.
    let pool = train_qs.clone();
    if !args.cross_encoder.all_questions {
        train_qs.retain(|q| q.positives() > 0);
    }
    if train_qs.is_empty() {
        bail!(
            "{}: no training question with a positive candidate",
            args.train.display()
        );
    }
    let started = Instant::now();
    let base = base_ranker(base_spec, &e.base_cache)?;
    let encoder = QuestionEncoder::load(&e.qq_encoder)
        .with_context(|| format!("--qq-encoder {}", e.qq_encoder.display()))?;
    eprintln!(
        "eqag: scoring {} training and {} dev questions with {base_spec} and embedding them",
        train_qs.len(),
        dev_qs.len()
    );
    let inter_by = InterBy::parse(&e.inter_by).ok_or_else(|| anyhow!("unknown --inter-by"))?;
    let answers = inter_by == InterBy::Answer;
    let cache = e.vector_cache.as_deref();
    let mut extras = Extras::new(&e.node_features, node_ranker).context("--node-features")?;
    let (train_base, train_scores_record) =
        training_scores(args, base_spec, &train_qs, &pool, &dev_qs)?;
    let train_base: &dyn Ranker = train_base.as_deref().unwrap_or(base.as_ref());
    // The training rows' extra features come after the `pair-vec` PCA is fitted on them.
    let mut train = Prepared::new(
        train_qs,
        train_base,
        &encoder,
        answers || extras.needs_answers(),
        cache,
        &Extras::default(),
    )?;
    if extras.vector(NodeVec::Pair).is_some() {
        let a = train.answers.as_deref().unwrap_or_default();
        extras.fit_pair_pca(&train.questions, &train.vectors, a, encoder.dim)?;
    }
    if extras.needs_cls() {
        let mut cls = ClsEncoder::for_base(base_spec).context("--node-features cls-vec")?;
        cls.cache = e.cls_cache.clone();
        eprintln!(
            "eqag: [CLS] states of {} training pairs from {base_spec}",
            train
                .questions
                .iter()
                .map(|q| q.candidates.len())
                .sum::<usize>()
        );
        let states = cls.encode(&train.questions)?;
        extras.fit_cls_pca(&states, cls.dim)?;
        train.cls = Some(states);
        extras.set_cls_encoder(cls);
    }
    train.extra = train.extra_features(&extras, encoder.dim)?;
    let dev = Prepared::new(dev_qs, base.as_ref(), &encoder, answers, cache, &extras)?;
    let base_is_dir = Path::new(base_spec).is_dir();
    let base_ref = if base_is_dir {
        relative_path(Path::new(base_spec), &args.out)
            .display()
            .to_string()
    } else {
        base_spec.to_string()
    };
    let encoder_ref = relative_path(&e.qq_encoder, &args.out)
        .display()
        .to_string();
    let fit_opts = FitOptions {
        hidden: args.efficient.hidden.unwrap_or(8),
        root: !e.no_root,
        lr: args.lr.unwrap_or(0.01),
        epochs: args.epochs.unwrap_or(200),
        // --eval-every (shared with the cross-encoder; 0 there): dev MAP every N epochs.
        eval_every: if args.cross_encoder.eval_every == 0 {
            10
        } else {
            args.cross_encoder.eval_every
        },
        patience: args.patience.max(1),
        min_epochs: 100.min(args.epochs.unwrap_or(200)),
        fit_on_dev: e.fit_on_dev,
        seed: args.seed,
    };
    let chosen = GraphParams {
        variant,
        k_intra: e.k_intra,
        th_intra: e.th_intra,
        k_rows: e.k_rows,
        k_inter: e.k_inter,
        th_inter: e.th_inter,
        inter_by,
        directed_inter: e.directed_inter,
    };
    // Base metrics on the questions the GCN is chosen on (the odd half with --fit-on-dev).
    let val = if e.fit_on_dev {
        dev.split_alternate().1
    } else {
        dev.clone()
    };
    let base_dev = ansel_eval::evaluate(&val.questions, &val.scores, ansel_eval::Filter::Answered);
    let candidates = if e.sweep.is_some() {
        grid(chosen, e)
    } else {
        vec![chosen]
    };
    let mut sweep_lines = Vec::new();
    let mut best: Option<(f64, ansel_graph::Eqag, ansel_graph::Fit)> = None;
    for params in candidates {
        let mut model = build(
            &train,
            &params,
            feature,
            e.random_init,
            &base_ref,
            base_is_dir,
            &encoder_ref,
            encoder.dim,
            &extras,
        )?;
        let result = fit(&mut model, &dev, &fit_opts)?;
        let map = result.dev.metric("MAP").unwrap_or(0.0);
        let line = serde_json::json!({
            "variant": params.variant.name(), "k_intra": params.k_intra, "th_intra": params.th_intra,
            "k_rows": params.k_rows, "k_inter": params.k_inter, "th_inter": params.th_inter,
            "inter_by": e.inter_by, "fit_on_dev": e.fit_on_dev, "node_features": e.node_features,
            "train_scores": train_scores_record["kind"], "directed_inter": e.directed_inter,
            "edges": model.config.training_edges, "best_epoch": result.best_epoch,
            "dev P@1": result.dev.metric("P@1"), "dev MAP": map, "dev MRR": result.dev.metric("MRR"),
            "base dev P@1": base_dev.metric("P@1"), "base dev MAP": base_dev.metric("MAP"),
        });
        eprintln!("eqag: {line}");
        sweep_lines.push(line);
        if best.as_ref().is_none_or(|b| map > b.0) {
            best = Some((map, model, result));
        }
    }
    let (_, model, result) = best.ok_or_else(|| anyhow!("nothing trained"))?;
    if let Some(path) = &e.sweep {
        let text: String = sweep_lines.iter().map(|l| format!("{l}\n")).collect();
        ansel_model::write_atomic(path, text.as_bytes())?;
    }
    let mut metrics = std::collections::BTreeMap::new();
    for (k, v) in result.dev.named_metrics().into_iter().take(3) {
        metrics.insert(format!("dev {k}"), v);
    }
    for (k, v) in base_dev.named_metrics().into_iter().take(3) {
        metrics.insert(format!("base dev {k}"), v);
    }
    let name = args
        .cross_encoder
        .name
        .clone()
        .unwrap_or_else(|| format!("eqag-{}", model.config.graph.variant.name()));
    // What each vector feature's PCA was fitted on, for the card (no labels are read).
    let pca_record = |kind: NodeVec, inputs: &str| {
        let (_, p) = model.pcas.iter().find(|(k, _)| *k == kind)?;
        Some(serde_json::json!({
            "fitted_on": format!("training nodes ({inputs} only, no labels)"),
            "nodes": model.config.training_nodes,
            "input": p.input, "dims": p.dims, "variance": p.variance,
        }))
    };
    let record = TrainingRecord {
        train_data: vec![args.train.display().to_string()],
        dev_data: Some(args.dev.display().to_string()),
        hyperparameters: serde_json::json!({
            "graph": model.config.graph, "feature": e.feature, "random_init": e.random_init,
            "node_features": e.node_features,
            "pair_vec_pca": pca_record(NodeVec::Pair, "pair vectors"),
            "cls_vec_pca": pca_record(NodeVec::Cls, "the base cross-encoder's [CLS] states").map(|mut r| {
                r["cache"] = serde_json::json!(e.cls_cache.as_ref().map(|p| p.display().to_string()));
                r
            }),
            "train_scores": train_scores_record,
            "gcn": fit_opts, "optimizer": "Adam, full batch", "loss": "BCE with logits on training nodes",
            "fit_on": if e.fit_on_dev { "even dev questions (early stopping and sweep on the odd ones)" } else { "training nodes" },
            "training_questions": if args.cross_encoder.all_questions { "all" } else { "answered" },
            "sweep": e.sweep.as_ref().map(|p| p.display().to_string()),
            "log": result.log,
        }),
        seed: args.seed,
        epochs_completed: result.epochs,
        best_epoch: Some(result.best_epoch),
        metrics,
        train_seconds: started.elapsed().as_secs_f64(),
        machine: "2-core x86_64 CPU, libtorch 2.13 (tch 0.26)".into(),
        base: vec![base_spec.to_string(), e.qq_encoder.display().to_string()],
    };
    model.save(&args.out, &name, record)?;
    let card = ModelCard::read(&args.out)?;
    println!("{}", serde_json::to_string_pretty(&card)?);
    Ok(())
}

/// The ranker that gives the training rows their base scores when it is not the base itself
/// (`None`: in sample, the paper's way), and what the card records about it.
fn training_scores(
    args: &TrainArgs,
    base_spec: &str,
    rows: &[Question],
    pool: &[Question],
    dev: &[Question],
) -> Result<(Option<Box<dyn Ranker>>, serde_json::Value)> {
    let e = &args.eqag;
    if let Some(path) = &e.train_scores {
        let cache = ScoreCache::read(path)?;
        let missing = rows.iter().filter(|q| cache.get(q).is_none()).count();
        if missing > 0 {
            bail!(
                "--train-scores {}: {missing} of the {} training questions are missing (or their candidate ids differ)",
                path.display(),
                rows.len()
            );
        }
        let record = serde_json::json!({"kind": "file", "path": path.display().to_string(), "model": cache.model});
        return Ok((Some(Box::new(FixedScores::new(base_spec, cache))), record));
    }
    let Some(folds) = e.oof_folds else {
        return Ok((None, serde_json::json!({"kind": "in-sample"})));
    };
    let base_dir = Path::new(base_spec);
    if !base_dir.is_dir() {
        if base_spec.contains('+') {
            bail!("--oof-folds: the fused base {base_spec:?} cannot be retrained per fold; give its out-of-fold scores with --train-scores FILE");
        }
        // A built-in ranker is not trained: its scores of the training rows are out of sample.
        eprintln!("eqag: {base_spec} is not trained on data; its own scores are out of fold");
        return Ok((
            None,
            serde_json::json!({"kind": "out-of-fold", "folds": folds, "note": "built-in untrained base: its own scores"}),
        ));
    }
    let card_bytes = std::fs::read(base_dir.join(ansel_model::CARD_FILE))
        .with_context(|| format!("--base {base_spec}"))?;
    let card = ModelCard::read(base_dir)?;
    let Ok(architecture) = card.kind.parse::<Architecture>() else {
        bail!(
            "--oof-folds: the base {base_spec} is a {:?} model, which is too expensive to train {folds} times here \
             (out-of-fold retraining supports {}); compute its out-of-fold scores elsewhere and pass --train-scores FILE",
            card.kind,
            ansel_efficient::KINDS.join(", ")
        );
    };
    let key = oof_key(&card_bytes, folds, e.oof_seed, rows, pool, dev);
    let cache_dir = e.oof_cache.clone().unwrap_or_else(|| {
        args.out
            .parent()
            .unwrap_or(Path::new("."))
            .join("oof-cache")
    });
    // The recipe is checked before any fold trains.
    TrainOptions::from_card(&card, "", "", Path::new(""))?;
    let mut vectors = None;
    let mut fold_metrics = Vec::new();
    let mut trainer = |fold: usize, train: &[Question]| -> ansel_model::Result<Box<dyn Ranker>> {
        let out = cache_dir.join(&key).join(format!("fold-{fold}"));
        let train_path = format!(
            "{} minus out-of-fold fold {fold} of {folds} (fold seed {})",
            args.train.display(),
            e.oof_seed
        );
        let mut opts =
            TrainOptions::from_card(&card, &train_path, &args.dev.display().to_string(), &out)?;
        opts.threads = args.threads;
        if vectors.is_none() {
            vectors = Some(
                opts.vectors
                    .load(&opts.models_dir)
                    .map_err(|e| ansel_model::ModelError::Backend(e.to_string()))?,
            );
        }
        eprintln!(
            "eqag: out-of-fold {}: fold {} of {folds}, training on {} questions",
            architecture.name(),
            fold + 1,
            train.len()
        );
        let summary = ansel_efficient::train_with_vectors(&opts, vectors.as_ref(), train, dev)?;
        fold_metrics.push(serde_json::json!({
            "fold": fold, "trained_on": train.len(), "dev_map": summary.dev_map,
            "best_epoch": summary.best_epoch, "seconds": summary.seconds,
        }));
        let fold_card = ModelCard::read(&out)?;
        Ok(Box::new(EfficientRanker::load(&out, &fold_card)?))
    };
    let out = out_of_fold(
        rows,
        pool,
        folds,
        e.oof_seed,
        &key,
        Some(&cache_dir),
        base_spec,
        &mut trainer,
    )?;
    eprintln!(
        "eqag: out-of-fold scores of {} training questions {} {}",
        rows.len(),
        if out.cached {
            "read from"
        } else {
            "written to"
        },
        out.path.display()
    );
    let cache = ScoreCache::read(&out.path)?;
    let record = serde_json::json!({
        "kind": "out-of-fold", "folds": folds, "fold_seed": e.oof_seed,
        "recipe": format!("{} retrained with the recipe in {}/model.json", architecture.name(), base_spec),
        "cache": out.path.display().to_string(), "cached": out.cached, "fold_rankers": fold_metrics,
    });
    // The model is reseeded for the GCN after the fold rankers' training reseeded libtorch.
    ansel_torch_threads(args.threads, args.seed);
    Ok((Some(Box::new(FixedScores::new(base_spec, cache))), record))
}

fn ansel_torch_threads(threads: usize, seed: u64) {
    ansel_torch::init(threads, seed);
}
