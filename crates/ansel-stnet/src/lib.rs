//! STNet for TREC CAR paragraph ranking (the TRANS-CAPAR paper, sections 2.1-2.2), trained
//! pairwise (hinge loss, Adam) on BM25 candidates with article-level cross-validation.
//!
//! [`cross_validate`] splits the articles into folds (no article in two folds), and for each fold
//! trains a fresh network on the other folds' heading queries (pairs of a relevant and a
//! non-relevant BM25 candidate, labels from the hierarchical qrels) and re-ranks the fold's BM25
//! candidates. Training checkpoints every few steps (weights, Adam moments, sampler state) and
//! `--resume` continues exactly where a run stopped; finished folds are not redone. Each fold
//! directory records how its model was trained beside its weights (`model.json`), and the output
//! directory holds `training.json` (data, hyper-parameters, seed, timings, metrics).

pub mod data;
pub mod net;
pub mod pretrain;

use ansel_torch::tch::{nn, Device, Tensor};
use anyhow::{bail, Context, Result};
use data::Corpus;
pub use net::{NetConfig, StNet, Variant};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `ansel trec-car stnet`: the options of a cross-validated STNet run.
#[derive(clap::Args, Debug, Clone, Serialize)]
pub struct CvArgs {
    /// TREC CAR data folder (`*.cbor.paragraphs`, `*.cbor.outlines`, `*.hierarchical.qrels`).
    #[arg(long)]
    pub data: PathBuf,
    /// Folder for checkpoints, per-fold weights and `training.json`.
    #[arg(long)]
    pub out: PathBuf,
    /// Run file of the test folds' rankings (gzipped when it ends in `.gz`).
    #[arg(long)]
    pub run: PathBuf,
    #[arg(long, value_enum, default_value = "full")]
    pub variant: Variant,
    /// Article-level folds.
    #[arg(long, default_value_t = 5)]
    pub folds: usize,
    /// Training steps per fold (the most: the inner-dev choice may keep an earlier step).
    #[arg(long, default_value_t = 1500)]
    pub steps: usize,
    /// Share of each fold's training articles held out as its inner dev set, on which the
    /// checkpoint the fold's test queries are scored with is chosen (0: keep the last step).
    #[arg(long, default_value_t = 0.1)]
    pub dev_fraction: f64,
    /// Which weights score a fold's test queries: the inner-dev choice, or the last step's (a
    /// fixed training length, as the paper trains).
    #[arg(long, value_enum, default_value = "best")]
    pub checkpoint: CheckpointChoice,
    /// Inner-dev queries scored per evaluation (a seeded sample when there are more).
    #[arg(long, default_value_t = 50)]
    pub dev_queries: usize,
    /// Score the inner dev set every this many steps (a multiple of --checkpoint-every).
    #[arg(long, default_value_t = 250)]
    pub eval_every: usize,
    /// Pairs per step.
    #[arg(long, default_value_t = 16)]
    pub batch: usize,
    /// Adam learning rate (the peak, with --schedule warmup-linear).
    #[arg(long, default_value_t = 1e-3)]
    pub lr: f64,
    /// How the learning rate moves over a fold's --steps.
    #[arg(long, value_enum, default_value = "constant")]
    pub schedule: Schedule,
    /// Warm-up steps of --schedule warmup-linear.
    #[arg(long, default_value_t = 300)]
    pub warmup: usize,
    /// Blocks per transformer encoder and in the decoder (the paper: 6).
    #[arg(long, default_value_t = 2)]
    pub blocks: i64,
    /// Attention heads (the paper: 10).
    #[arg(long, default_value_t = 10)]
    pub heads: i64,
    /// How the scorer's weights on the neural branches (a, psi) start.
    #[arg(long, value_enum, default_value = "zero")]
    pub branch_init: net::BranchInit,
    /// Dropout in the transformer branch while training (the Transformer's 0.1; 0: none, as in
    /// the runs before this option).
    #[arg(long, default_value_t = 0.1)]
    pub trans_dropout: f64,
    /// Paragraph words the network reads.
    #[arg(long, default_value_t = 80)]
    pub max_para: usize,
    /// BM25 candidates re-ranked per query (and run depth).
    #[arg(long, default_value_t = 100)]
    pub depth: usize,
    #[arg(long, default_value_t = 13)]
    pub seed: u64,
    /// libtorch threads.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Save a checkpoint every this many steps.
    #[arg(long, default_value_t = 50)]
    pub checkpoint_every: usize,
    /// Continue from the checkpoints in --out.
    #[arg(long)]
    pub resume: bool,
    /// Pre-train on SQuAD v1.1 questions first (the article title and the question as the
    /// path, the question's paragraph relevant, BM25 negatives over the file's paragraphs):
    /// once per run, into `--out/pretrain`; every fold starts from those weights.
    #[arg(long)]
    pub pretrain_squad: Option<PathBuf>,
    /// Pre-training steps (the last step's weights are kept).
    #[arg(long, default_value_t = 8000)]
    pub pretrain_steps: usize,
    /// SQuAD questions pre-trained on (a seeded sample).
    #[arg(long, default_value_t = 30000)]
    pub pretrain_questions: usize,
}

/// The weights a fold's test queries are scored with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum CheckpointChoice {
    /// The evaluation with the best inner-dev MAP.
    Best,
    /// The last training step.
    Last,
}

/// The learning rate over a fold's training steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Schedule {
    /// --lr at every step (the paper's Adam "with default parameters").
    Constant,
    /// Linear warm-up to --lr over --warmup steps, then linear decay to 0 at --steps: Adam's
    /// first steps on the transformer branch follow gradients that a zero-initialised scorer
    /// weight makes tiny and noisy, and the decay steadies the late checkpoints the inner dev
    /// set chooses between.
    WarmupLinear,
}

impl CvArgs {
    /// The learning rate of training step `step` (0-based) of a phase of `total` steps.
    fn lr_at(&self, step: usize, total: usize) -> f64 {
        match self.schedule {
            Schedule::Constant => self.lr,
            Schedule::WarmupLinear => ansel_torch::WarmupLinear {
                peak: self.lr,
                warmup: self.warmup,
                total,
            }
            .at(step),
        }
    }
}

/// Where a fold's training stands: written with every checkpoint.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
struct FoldState {
    step: usize,
    rng: u64,
    wall_seconds: f64,
    cpu_seconds: f64,
    loss_sum: f64,
    losses: Vec<f64>,
    /// (step, inner-dev MAP) of every evaluation, and the best one's step.
    dev_maps: Vec<(usize, f64)>,
    best_step: usize,
}

/// How one fold's model was trained.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct FoldRecord {
    pub fold: usize,
    pub train_articles: usize,
    pub train_queries: usize,
    pub test_queries: usize,
    pub steps: usize,
    pub pairs: usize,
    pub wall_seconds: f64,
    pub cpu_seconds: f64,
    pub pairs_per_second: f64,
    pub scoring_seconds: f64,
    /// Mean hinge loss of each block of `checkpoint_every` steps.
    pub losses: Vec<f64>,
    /// Inner-dev articles and queries (0 without an inner dev set).
    #[serde(default)]
    pub dev_articles: usize,
    #[serde(default)]
    pub dev_queries: usize,
    /// (step, inner-dev MAP over the BM25 candidates) of every evaluation.
    #[serde(default)]
    pub dev_maps: Vec<(usize, f64)>,
    /// The step whose weights scored the test queries.
    #[serde(default)]
    pub chosen_step: usize,
}

struct Candidate {
    para: usize,
    features: [f32; 3],
    relevant: bool,
}

fn rng_next(state: &mut u64) -> u64 {
    ansel_trec_car::runs::splitmix64(state)
}

/// Trains and evaluates every fold; writes the run, per-fold weights and `training.json`.
pub fn cross_validate(args: &CvArgs) -> Result<()> {
    ansel_torch::init(args.threads, args.seed);
    if args.folds < 2 {
        bail!("--folds must be at least 2 (no article may be in train and test)");
    }
    if args.eval_every == 0 || !args.eval_every.is_multiple_of(args.checkpoint_every.max(1)) {
        bail!("--eval-every must be a positive multiple of --checkpoint-every");
    }
    if !(0.0..1.0).contains(&args.trans_dropout) {
        bail!("--trans-dropout must be in [0, 1)");
    }
    if args.schedule == Schedule::WarmupLinear && args.warmup >= args.steps {
        bail!("--warmup must be below --steps");
    }
    if args.pretrain_squad.is_some() {
        if args.pretrain_steps == 0 {
            bail!("--pretrain-steps must be at least 1 with --pretrain-squad");
        }
        if args.schedule == Schedule::WarmupLinear && args.warmup >= args.pretrain_steps {
            bail!("--warmup must be below --pretrain-steps");
        }
    }
    let files = ansel_trec_car::DataFiles::find(&args.data)?;
    let paragraphs = ansel_trec_car::load_paragraphs(&files.paragraphs)?;
    let queries = ansel_trec_car::load_queries(&files.outlines)?;
    let qrels = ansel_eval::read_qrels(&files.hierarchical_qrels)?;
    let bm25 = ansel_trec_car::bm25_run(&paragraphs, &queries, args.depth)?;
    let corpus = Corpus::new(&paragraphs, &queries, args.max_para, 24);
    let glove = ansel_vectors::VectorSource::Glove
        .load(&ansel_vectors::models_dir())
        .context("GloVe 50d (vendor/models/glove-6b-50d)")?;
    let (embeddings, known) = corpus.embeddings(&glove, args.seed);
    eprintln!(
        "{} paragraphs, {} queries, vocabulary {} ({} in GloVe)",
        paragraphs.len(),
        queries.len(),
        corpus.words.len(),
        known
    );
    let candidates = bm25_candidates(&corpus, &bm25, |qid, pid| {
        qrels
            .get(qid)
            .and_then(|j| j.get(pid))
            .is_some_and(|&r| r > 0)
    });
    let folds = ansel_trec_car::article_folds(
        queries.iter().map(|q| q.page_id.as_str()),
        args.folds,
        args.seed,
    );
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let config = NetConfig {
        variant: args.variant,
        dim: glove.dim() as i64,
        heads: args.heads,
        blocks: args.blocks,
        filters: 16,
        max_ngram: 3,
        kmax: 3,
        feature_dim: 16,
        branch_init: args.branch_init,
        trans_dropout: args.trans_dropout,
    };
    let pretrained = match &args.pretrain_squad {
        Some(path) => Some(pretrain(args, path, &config, &glove)?),
        None => None,
    };
    let mut scores: BTreeMap<String, Vec<(String, f64)>> = BTreeMap::new();
    let mut records = Vec::new();
    let mut parameters = 0;
    for fold in 0..args.folds {
        let dir = args.out.join(format!("fold-{fold}"));
        std::fs::create_dir_all(&dir)?;
        let in_fold = |q: &ansel_trec_car::OutlineQuery| folds[&q.page_id] == fold;
        let dev_articles = inner_dev_articles(
            folds
                .iter()
                .filter(|(_, &f)| f != fold)
                .map(|(a, _)| a.as_str()),
            args.dev_fraction,
            args.seed ^ fold as u64,
        );
        let trainable = |q: usize| !in_fold(&queries[q]) && has_pair(&candidates[q]);
        let train: Vec<usize> = (0..queries.len())
            .filter(|&q| trainable(q) && !dev_articles.contains(&queries[q].page_id))
            .collect();
        let mut dev: Vec<usize> = (0..queries.len())
            .filter(|&q| trainable(q) && dev_articles.contains(&queries[q].page_id))
            .collect();
        sample_in_place(&mut dev, args.dev_queries, args.seed ^ fold as u64);
        let test: Vec<usize> = (0..queries.len())
            .filter(|&q| in_fold(&queries[q]))
            .collect();
        let mut vs = nn::VarStore::new(Device::Cpu);
        ansel_torch::tch::manual_seed(args.seed as i64 + fold as i64);
        let net = StNet::new(&vs.root(), config.clone(), embeddings.shallow_clone());
        if let Some((weights, _)) = &pretrained {
            ansel_torch::load_vars(&mut vs, weights)?;
        }
        parameters = ansel_torch::parameter_count(&vs);
        let scores_path = dir.join("scores.tsv");
        let record_path = dir.join("model.json");
        if args.resume && scores_path.is_file() && record_path.is_file() {
            eprintln!(
                "fold {fold}: done before, reusing {}",
                scores_path.display()
            );
            let text = std::fs::read_to_string(&scores_path)?;
            for line in text.lines() {
                let f: Vec<&str> = line.split('\t').collect();
                if f.len() == 3 {
                    // The network's f32, as a fold scored in this run holds it: a resumed run
                    // writes the same run file as an uninterrupted one.
                    let score: f32 = f[2].parse()?;
                    scores
                        .entry(f[0].to_string())
                        .or_default()
                        .push((f[1].to_string(), f64::from(score)));
                }
            }
            let model: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&record_path)?)?;
            records.push(serde_json::from_value(model["training"].clone())?);
            continue;
        }
        let split = Split {
            corpus: &corpus,
            candidates: &candidates,
            train: &train,
            dev: &dev,
        };
        let phase = Phase {
            label: format!("fold {fold}"),
            rng: args.seed ^ (fold as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            steps: args.steps,
            checkpoint: args.checkpoint,
        };
        let state = train_fold(args, &net, &mut vs, &dir, split, &phase)?;
        let start = Instant::now();
        let mut lines = String::new();
        for (&q, fold_scores) in test
            .iter()
            .zip(score_queries(&net, &corpus, &candidates, &test))
        {
            let list = scores.entry(queries[q].id.clone()).or_default();
            for (c, s) in candidates[q].iter().zip(fold_scores) {
                let pid = &paragraphs[c.para].id;
                lines.push_str(&format!("{}\t{pid}\t{s}\n", queries[q].id));
                list.push((pid.clone(), f64::from(s)));
            }
        }
        let record = FoldRecord {
            fold,
            train_articles: folds.values().filter(|&&f| f != fold).count(),
            train_queries: train.len(),
            test_queries: test.len(),
            steps: state.step,
            pairs: state.step * args.batch,
            wall_seconds: state.wall_seconds,
            cpu_seconds: state.cpu_seconds,
            pairs_per_second: (state.step * args.batch) as f64 / state.wall_seconds.max(1e-9),
            scoring_seconds: start.elapsed().as_secs_f64(),
            losses: state.losses.clone(),
            dev_articles: dev_articles.len(),
            dev_queries: dev.len(),
            dev_maps: state.dev_maps.clone(),
            chosen_step: state.best_step,
        };
        ansel_torch::save_vars(&vs, &dir.join("model.safetensors"))?;
        let model = serde_json::json!({
            "model": args.variant.name(),
            "config": config,
            "parameters": parameters,
            "seed": args.seed,
            "data": args.data,
            "labels": files.hierarchical_qrels,
            "pretrained_from": pretrained.as_ref().map(|p| &p.0),
            "test_articles": folds.iter().filter(|(_, &f)| f == fold).map(|(a, _)| a.clone()).collect::<std::collections::BTreeSet<_>>(),
            "arguments": args,
            "training": record,
        });
        std::fs::write(&record_path, serde_json::to_string_pretty(&model)?)?;
        std::fs::write(&scores_path, lines)?;
        eprintln!(
            "fold {fold}: {} steps, {:.1} pairs/s, scored {} queries in {:.0}s",
            record.steps,
            record.pairs_per_second,
            test.len(),
            record.scoring_seconds
        );
        records.push(record);
    }
    let run: Vec<(String, ansel_trec_car::RankedList)> = queries
        .iter()
        .map(|q| (q.id.clone(), scores.remove(&q.id).unwrap_or_default()))
        .collect();
    ansel_trec_car::write_run_gz(&args.run, &run, args.variant.name(), args.depth)
        .with_context(|| format!("cannot write {}", args.run.display()))?;
    let exact: ansel_eval::ExactRun = run
        .iter()
        .map(|(q, l)| (q.clone(), l.iter().cloned().collect()))
        .collect();
    let report = ansel_eval::trec_eval(&qrels, &exact);
    let wall: f64 = records.iter().map(|r| r.wall_seconds).sum();
    let pairs: usize = records.iter().map(|r| r.pairs).sum();
    let summary = serde_json::json!({
        "model": args.variant.name(),
        "config": config,
        "parameters": parameters,
        "arguments": args,
        "pretrain": pretrained.as_ref().map(|p| &p.1),
        "glove_known_words": known,
        "vocabulary": corpus.words.len(),
        "folds": records,
        "training_wall_seconds": wall,
        "pairs_per_second": pairs as f64 / wall.max(1e-9),
        "hierarchical": report.mean,
    });
    std::fs::write(
        args.out.join("training.json"),
        serde_json::to_string_pretty(&summary)?,
    )?;
    eprintln!(
        "{}: MAP {:.4} R-Prec {:.4} NDCG@10 {:.4} (hierarchical) -> {}",
        args.variant.name(),
        report.mean.map,
        report.mean.rprec,
        report.mean.ndcg_cut_10,
        args.run.display()
    );
    Ok(())
}

/// Each query's BM25 candidates that the corpus holds, with their pair features and labels.
fn bm25_candidates(
    corpus: &Corpus,
    bm25: &[(String, ansel_trec_car::RankedList)],
    relevant: impl Fn(&str, &str) -> bool,
) -> Vec<Vec<Candidate>> {
    bm25.iter()
        .map(|(qid, list)| {
            let best = list.first().map_or(1.0, |c| c.1);
            list.iter()
                .enumerate()
                .filter_map(|(rank, (pid, score))| {
                    let para = *corpus.para_index.get(pid)?;
                    Some(Candidate {
                        para,
                        features: corpus.pair_features(para, rank, *score, best),
                        relevant: relevant(qid, pid),
                    })
                })
                .collect()
        })
        .collect()
}

/// Whether a query's candidates give a training pair: a relevant and a non-relevant one.
fn has_pair(candidates: &[Candidate]) -> bool {
    candidates.iter().any(|c| c.relevant) && candidates.iter().any(|c| !c.relevant)
}

/// Pre-trains a network of `config` on SQuAD (`--pretrain-squad`) and returns its weights:
/// trained once into `--out/pretrain` and reused by `--resume`. Its record is
/// `pretrain/model.json`.
fn pretrain(
    args: &CvArgs,
    squad_path: &Path,
    config: &NetConfig,
    glove: &ansel_vectors::WordVectors,
) -> Result<(PathBuf, serde_json::Value)> {
    let dir = args.out.join("pretrain");
    let (weights, record_path) = (dir.join("model.safetensors"), dir.join("model.json"));
    if args.resume && weights.is_file() && record_path.is_file() {
        eprintln!("pretrain: done before, reusing {}", weights.display());
        let record = serde_json::from_str(&std::fs::read_to_string(&record_path)?)?;
        return Ok((weights, record));
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let bytes = ansel_data::read_bytes(squad_path)?;
    let squad = ansel_data::readers::squad::parse_paragraphs(squad_path, &bytes)?;
    let data = pretrain::squad_outlines(&squad, args.pretrain_questions, args.seed);
    let start = Instant::now();
    let bm25 = ansel_trec_car::bm25_run(&data.paragraphs, &data.queries, args.depth)?;
    eprintln!(
        "pretrain: {} questions over {} SQuAD paragraphs, BM25 in {:.0}s",
        data.queries.len(),
        data.paragraphs.len(),
        start.elapsed().as_secs_f64()
    );
    let corpus = Corpus::new(&data.paragraphs, &data.queries, args.max_para, 24);
    let (embeddings, _) = corpus.embeddings(glove, args.seed);
    let candidates = bm25_candidates(&corpus, &bm25, |qid, pid| {
        data.relevant.get(qid).is_some_and(|p| p == pid)
    });
    let train: Vec<usize> = (0..candidates.len())
        .filter(|&q| has_pair(&candidates[q]))
        .collect();
    let mut vs = nn::VarStore::new(Device::Cpu);
    ansel_torch::tch::manual_seed(args.seed as i64);
    let net = StNet::new(&vs.root(), config.clone(), embeddings);
    let phase = Phase {
        label: "pretrain".into(),
        rng: args.seed ^ 0x5EED_5AAD,
        steps: args.pretrain_steps,
        checkpoint: CheckpointChoice::Last,
    };
    let split = Split {
        corpus: &corpus,
        candidates: &candidates,
        train: &train,
        dev: &[],
    };
    let state = train_fold(args, &net, &mut vs, &dir, split, &phase)?;
    ansel_torch::save_vars(&vs, &weights)?;
    let record = serde_json::json!({
        "model": args.variant.name(),
        "config": config,
        "seed": args.seed,
        "data": squad_path,
        "questions": data.queries.len(),
        "questions_with_their_paragraph_in_bm25": train.len(),
        "paragraphs": data.paragraphs.len(),
        "steps": state.step,
        "pairs": state.step * args.batch,
        "wall_seconds": state.wall_seconds,
        "cpu_seconds": state.cpu_seconds,
        "pairs_per_second": (state.step * args.batch) as f64 / state.wall_seconds.max(1e-9),
        "losses": state.losses,
    });
    ansel_model::write_atomic(
        &record_path,
        serde_json::to_string_pretty(&record)?.as_bytes(),
    )?;
    Ok((weights, record))
}

/// A seeded `fraction` of the articles (at least one when the fraction is above 0).
fn inner_dev_articles<'a>(
    articles: impl IntoIterator<Item = &'a str>,
    fraction: f64,
    seed: u64,
) -> std::collections::BTreeSet<String> {
    let mut ids: Vec<&str> = articles.into_iter().collect();
    ids.sort_unstable();
    if fraction <= 0.0 || ids.is_empty() {
        return Default::default();
    }
    let n = ((ids.len() as f64 * fraction).round() as usize).clamp(1, ids.len() - 1);
    let mut state = seed;
    sample_in_place(&mut ids, n, rng_next(&mut state));
    ids.into_iter().map(str::to_string).collect()
}

/// Keeps a seeded sample of `n` of the items (all of them when there are not more), in order.
fn sample_in_place<T: Copy>(items: &mut Vec<T>, n: usize, seed: u64) {
    if items.len() <= n {
        return;
    }
    let mut state = seed;
    let mut keyed: Vec<(u64, usize)> = (0..items.len())
        .map(|i| (rng_next(&mut state), i))
        .collect();
    keyed.sort_unstable();
    let mut keep: Vec<usize> = keyed[..n].iter().map(|&(_, i)| i).collect();
    keep.sort_unstable();
    *items = keep.into_iter().map(|i| items[i]).collect();
}

/// The network's score of every BM25 candidate of each query, in candidate order.
fn score_queries(
    net: &StNet,
    corpus: &Corpus,
    candidates: &[Vec<Candidate>],
    queries: &[usize],
) -> Vec<Vec<f32>> {
    ansel_torch::tch::no_grad(|| {
        queries
            .iter()
            .map(|&q| {
                candidates[q]
                    .chunks(100)
                    .flat_map(|chunk| {
                        let items: Vec<(usize, usize, [f32; 3])> =
                            chunk.iter().map(|c| (q, c.para, c.features)).collect();
                        Vec::<f32>::try_from(net.score(&corpus.batch(&items), false))
                            .expect("float scores")
                    })
                    .collect()
            })
            .collect()
    })
}

/// Mean average precision of the scores over each query's candidates, relevance from the
/// candidates' labels (the inner-dev criterion, not a reported metric).
fn candidate_map(candidates: &[Vec<Candidate>], queries: &[usize], scores: &[Vec<f32>]) -> f64 {
    let mut total = 0.0;
    for (&q, s) in queries.iter().zip(scores) {
        let mut order: Vec<usize> = (0..s.len()).collect();
        order.sort_by(|&a, &b| s[b].total_cmp(&s[a]).then(a.cmp(&b)));
        let (mut hits, mut sum) = (0usize, 0.0);
        for (rank, &i) in order.iter().enumerate() {
            if candidates[q][i].relevant {
                hits += 1;
                sum += hits as f64 / (rank + 1) as f64;
            }
        }
        total += if hits > 0 { sum / hits as f64 } else { 0.0 };
    }
    total / queries.len().max(1) as f64
}

/// What a training run reads: the corpus, every query's candidates, the queries trained on and
/// the inner-dev queries its checkpoint is chosen on (none: the last step's).
#[derive(Clone, Copy)]
struct Split<'a> {
    corpus: &'a Corpus,
    candidates: &'a [Vec<Candidate>],
    train: &'a [usize],
    dev: &'a [usize],
}

/// One training run: a fold's, or the pre-training every fold starts from.
struct Phase {
    /// `fold 3` or `pretrain`, in messages.
    label: String,
    /// Seed of the pair sampler.
    rng: u64,
    steps: usize,
    /// The inner-dev choice (with --checkpoint best and an inner dev set) or the last step.
    checkpoint: CheckpointChoice,
}

fn train_fold(
    args: &CvArgs,
    net: &StNet,
    vs: &mut nn::VarStore,
    dir: &Path,
    split: Split,
    phase: &Phase,
) -> Result<FoldState> {
    let Split {
        corpus,
        candidates,
        train,
        ..
    } = split;
    let label = &phase.label;
    if train.is_empty() {
        bail!("{label}: no training query with a relevant and a non-relevant candidate");
    }
    let params = ansel_torch::trainable(vs);
    let mut opt = ansel_torch::AdamW::new(&params);
    let state_path = dir.join("state.json");
    let (ckpt, optim, best) = (
        dir.join("checkpoint.safetensors"),
        dir.join("optim.safetensors"),
        dir.join("best.safetensors"),
    );
    let mut state = FoldState {
        rng: phase.rng,
        ..Default::default()
    };
    if args.resume && state_path.is_file() {
        state = serde_json::from_str(&std::fs::read_to_string(&state_path)?)?;
        ansel_torch::load_vars(vs, &ckpt)?;
        opt.load(&optim)?;
        eprintln!("{label}: resuming at step {}", state.step);
    }
    let wall_start = Instant::now();
    let cpu_start = ansel_torch::cpu_seconds().unwrap_or(0.0);
    let (wall0, cpu0) = (state.wall_seconds, state.cpu_seconds);
    let save = |state: &mut FoldState, opt: &ansel_torch::AdamW| -> Result<()> {
        state.wall_seconds = wall0 + wall_start.elapsed().as_secs_f64();
        state.cpu_seconds = cpu0 + ansel_torch::cpu_seconds().unwrap_or(0.0) - cpu_start;
        ansel_torch::save_vars(vs, &ckpt)?;
        opt.save(&optim)?;
        let tmp = dir.join(".state.json.tmp");
        std::fs::write(&tmp, serde_json::to_string(state)?)?;
        std::fs::rename(&tmp, &state_path)?;
        Ok(())
    };
    while state.step < phase.steps {
        let mut pos = Vec::with_capacity(args.batch);
        let mut neg = Vec::with_capacity(args.batch);
        for _ in 0..args.batch {
            let q = train[(rng_next(&mut state.rng) % train.len() as u64) as usize];
            let (p, n): (Vec<&Candidate>, Vec<&Candidate>) =
                candidates[q].iter().partition(|c| c.relevant);
            let a = p[(rng_next(&mut state.rng) % p.len() as u64) as usize];
            let b = n[(rng_next(&mut state.rng) % n.len() as u64) as usize];
            pos.push((q, a.para, a.features));
            neg.push((q, b.para, b.features));
        }
        pos.extend(neg);
        let s = net.score(&corpus.batch(&pos), true);
        let b = args.batch as i64;
        let loss = pairwise_hinge(&s.narrow(0, 0, b), &s.narrow(0, b, b));
        ansel_torch::zero_gradients(&params);
        loss.backward();
        ansel_torch::clip_gradients(&params, 5.0);
        let lr = args.lr_at(state.step, phase.steps);
        state.step += 1;
        opt.step(&params, lr, 0.0, state.step);
        state.loss_sum += loss.double_value(&[]);
        let last = state.step == phase.steps;
        let evaluate =
            !split.dev.is_empty() && (state.step.is_multiple_of(args.eval_every.max(1)) || last);
        if evaluate {
            let scores = score_queries(net, corpus, candidates, split.dev);
            let map = candidate_map(candidates, split.dev, &scores);
            let best_map = state.dev_maps.iter().map(|d| d.1).fold(f64::MIN, f64::max);
            state.dev_maps.push((state.step, map));
            if map > best_map {
                ansel_torch::save_vars(vs, &best)?;
                state.best_step = state.step;
            }
            eprintln!("{label}: step {} inner-dev MAP {map:.4}", state.step);
        }
        if state.step.is_multiple_of(args.checkpoint_every) || last {
            let span = (state.step - 1) % args.checkpoint_every + 1;
            state.losses.push(state.loss_sum / span as f64);
            state.loss_sum = 0.0;
            save(&mut state, &opt)?;
            eprintln!(
                "{label}: step {}/{} loss {:.4} ({:.1} pairs/s)",
                state.step,
                phase.steps,
                state.losses.last().unwrap_or(&0.0),
                (state.step * args.batch) as f64 / state.wall_seconds.max(1e-9)
            );
        }
    }
    save(&mut state, &opt)?;
    if phase.checkpoint == CheckpointChoice::Best
        && state.best_step > 0
        && state.best_step < state.step
    {
        eprintln!(
            "{label}: scoring with step {} (inner-dev best)",
            state.best_step
        );
        ansel_torch::load_vars(vs, &best)?;
    } else {
        state.best_step = state.step;
    }
    Ok(state)
}

/// The paper's pairwise hinge, `max(0, 1 - phi(s, p+) + phi(s, p-))`, averaged over the pairs,
/// taken on phi before its ELU: the ELU is monotone, so the ranking is the same, but a score
/// saturated at -1 passes no gradient, and the -SIM variant started there and never left it
/// (loss stuck at 1.0).
fn pairwise_hinge(positive: &Tensor, negative: &Tensor) -> Tensor {
    (negative - positive + 1.0).clamp_min(0.0).mean(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ansel_trec_car::{OutlineQuery, ParaBody, Paragraph};

    fn para(id: &str, text: &str) -> Paragraph {
        Paragraph {
            id: id.into(),
            bodies: vec![ParaBody::Text(text.into())],
        }
    }

    #[test]
    fn the_schedule_warms_up_then_decays_to_zero_at_the_last_step() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            args: CvArgs,
        }
        let parse = |extra: &[&str]| {
            let base = [
                "x", "--data", "d", "--out", "o", "--run", "r", "--steps", "1000",
            ];
            <Cli as clap::Parser>::parse_from(base.iter().chain(extra)).args
        };
        let constant = parse(&[]);
        assert_eq!(constant.schedule, Schedule::Constant);
        assert_eq!(
            (constant.lr_at(0, 1000), constant.lr_at(999, 1000)),
            (1e-3, 1e-3)
        );
        let warm = parse(&["--schedule", "warmup-linear", "--warmup", "100"]);
        assert!((warm.lr_at(0, 1000) - 1e-5).abs() < 1e-12);
        assert!((warm.lr_at(99, 1000) - 1e-3).abs() < 1e-12);
        assert!((warm.lr_at(550, 1000) - 0.5e-3).abs() < 1e-12);
        assert!(warm.lr_at(999, 1000) > 0.0 && warm.lr_at(1000, 1000) == 0.0);
    }

    #[test]
    fn inner_dev_is_a_seeded_share_of_the_training_articles() {
        let articles: Vec<String> = (0..40).map(|i| format!("a{i}")).collect();
        let pick = |seed| inner_dev_articles(articles.iter().map(String::as_str), 0.1, seed);
        assert_eq!(pick(3).len(), 4);
        assert_eq!(pick(3), pick(3), "seeded");
        assert_ne!(pick(3), pick(4));
        assert!(inner_dev_articles(articles.iter().map(String::as_str), 0.0, 3).is_empty());
        let mut v: Vec<usize> = (0..10).collect();
        sample_in_place(&mut v, 4, 9);
        assert_eq!(v.len(), 4);
        assert!(v.windows(2).all(|w| w[0] < w[1]), "kept in order: {v:?}");
    }

    #[test]
    fn candidate_map_ranks_by_score() {
        let c = |relevant| Candidate {
            para: 0,
            features: [0.0; 3],
            relevant,
        };
        let cands = vec![vec![c(false), c(true), c(false), c(true)]];
        // Relevant at ranks 1 and 4: (1 + 2/4) / 2.
        let map = candidate_map(&cands, &[0], &[vec![0.5, 0.9, 0.7, 0.1]]);
        assert!((map - 0.75).abs() < 1e-9, "{map}");
    }

    #[test]
    fn every_variant_scores_a_batch_and_learns_a_pair() {
        let paras = [
            para("p0", "the shell of a sea turtle is hard"),
            para("p1", "turtle ships were built in korea"),
            para("p2", "x"),
        ];
        let queries = [OutlineQuery {
            id: "Sea%20turtle/Anatomy/Shell".into(),
            page_id: "Sea%20turtle".into(),
            title: "Sea turtle".into(),
            headings: vec!["Anatomy".into(), "Shell".into()],
        }];
        let corpus = Corpus::new(&paras, &queries, 6, 24);
        assert_eq!(
            corpus.paragraphs[0].len(),
            6,
            "paragraphs are cut at max_para"
        );
        let emb = Tensor::randn(
            [corpus.words.len() as i64, 10],
            (ansel_torch::tch::Kind::Float, Device::Cpu),
        );
        let settings = [Variant::Full, Variant::NoTrans, Variant::NoSim]
            .into_iter()
            .flat_map(|v| [(v, net::BranchInit::Random), (v, net::BranchInit::Zero)]);
        for (variant, branch_init) in settings {
            ansel_torch::tch::manual_seed(1);
            let vs = nn::VarStore::new(Device::Cpu);
            let config = NetConfig {
                variant,
                dim: 10,
                heads: 2,
                blocks: 1,
                filters: 4,
                max_ngram: 3,
                kmax: 3,
                feature_dim: 4,
                branch_init,
                trans_dropout: 0.1,
            };
            let net = StNet::new(&vs.root(), config, emb.shallow_clone());
            let items = [
                (0, 0, [1.0, 1.0, 0.5]),
                (0, 1, [0.5, 0.5, 0.5]),
                (0, 2, [0.1, 0.3, 0.1]),
            ];
            let batch = corpus.batch(&items);
            assert_eq!(net.score(&batch, false).size(), [3]);
            // Dropout only while training: scoring is deterministic.
            let scored = |train| Vec::<f32>::try_from(net.score(&batch, train)).unwrap();
            assert_eq!(scored(false), scored(false));
            let params = ansel_torch::trainable(&vs);
            let mut opt = ansel_torch::AdamW::new(&params);
            for step in 1..=40 {
                let s = net.score(&batch, true);
                let loss = pairwise_hinge(&s.narrow(0, 0, 1), &s.narrow(0, 1, 1));
                ansel_torch::zero_gradients(&params);
                loss.backward();
                opt.step(&params, 1e-2, 0.0, step);
            }
            let s = scored(false);
            assert!(s[0] > s[1], "{variant:?} {branch_init:?}: {s:?}");
            if variant != Variant::NoTrans && branch_init == net::BranchInit::Random {
                // The transformer branch feeds the score, so its dropout moves it in training.
                assert_ne!(scored(true), scored(true), "{variant:?}");
            }
            if branch_init == net::BranchInit::Zero {
                // The silenced branches' weights started at zero and training moved them.
                let w =
                    Vec::<f32>::try_from(vs.variables()["scorer.weight"].flatten(0, -1)).unwrap();
                let branch = if variant == Variant::NoTrans {
                    &w[4..]
                } else {
                    &w[..10]
                };
                assert!(branch.iter().any(|x| *x != 0.0), "{variant:?}: {w:?}");
            }
        }
    }
}
