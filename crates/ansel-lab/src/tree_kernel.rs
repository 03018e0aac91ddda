//! `ansel-lab tk`: the chapter-4 tree-kernel ranker on parsed (question, candidate) pairs: shallow
//! chunk trees with REL marks, a tree kernel (subset or partial) of the question trees plus that of the
//! candidate trees (each normalised), an SVM on the training pairs; writes each evaluated set's
//! scores and metrics, and labels unlabelled sets with the SVM (chapter 5's automatic data).

use crate::read_questions;
use ansel_data::Question;
use ansel_tk::{pair_trees, ParsedText, Ptk, Stk, Svm, SvmOptions, Token, Tree, TreeKernel};
use anyhow::{bail, Context, Result};
use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(clap::Args, Debug, serde::Serialize)]
pub struct TreeKernelArgs {
    /// Parsed texts (`scripts/parse-shallow.py` output: one JSON object per line).
    #[arg(long, required = true, num_args = 1..)]
    parsed: Vec<PathBuf>,
    /// Training questions (any format `ansel eval` reads); questions without a positive are left out.
    #[arg(long)]
    train: PathBuf,
    /// Sets to score (every question) and evaluate (the answered questions), e.g. dev and test.
    #[arg(long, required = true, num_args = 1..)]
    eval: Vec<PathBuf>,
    /// Sets to annotate (chapter 5): every question is scored, and `<set>.labelled.jsonl` gets
    /// each candidate labelled positive where the SVM's decision value is above 0.
    #[arg(long, num_args = 1..)]
    label: Vec<PathBuf>,
    /// Output folder: `<set>.scores.jsonl`, `<set>.labelled.jsonl`, `report.json`.
    #[arg(long)]
    out: PathBuf,
    /// The tree kernel: `stk` (subset trees) or `ptk` (partial trees).
    #[arg(long, value_enum, default_value_t = KernelKind::Stk)]
    kernel: KernelKind,
    /// Decay of the tree kernel (fragment size for `stk`, child gaps for `ptk`).
    #[arg(long, default_value_t = 0.4)]
    lambda: f64,
    /// `ptk`: weight of each fragment node.
    #[arg(long, default_value_t = 0.4)]
    mu: f64,
    #[arg(long, default_value_t = 1.0)]
    c: f64,
    /// Box of the positives relative to the negatives' (default: negatives / positives).
    #[arg(long)]
    positive_weight: Option<f64>,
    /// Use at most this many training questions (the first ones; the kernel matrix grows with
    /// the square of the pairs).
    #[arg(long)]
    max_train_questions: Option<usize>,
    #[arg(long, default_value_t = 2)]
    threads: usize,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, serde::Serialize)]
#[serde(rename_all = "lowercase")]
enum KernelKind {
    Stk,
    Ptk,
}

/// One (question, candidate) pair as trees, with their self kernels.
struct Item {
    q: Tree,
    a: Tree,
    qq: f64,
    aa: f64,
}

fn read_parsed(paths: &[PathBuf]) -> Result<HashMap<String, Vec<Token>>> {
    let mut out = HashMap::new();
    for path in paths {
        let file =
            std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        for (n, line) in std::io::BufReader::new(file).lines().enumerate() {
            let line = line.with_context(|| format!("{}:{}", path.display(), n + 1))?;
            if line.trim().is_empty() {
                continue;
            }
            let parsed: ParsedText = serde_json::from_str(&line)
                .with_context(|| format!("{}:{}: not a parsed text", path.display(), n + 1))?;
            out.insert(parsed.text, parsed.tokens);
        }
    }
    Ok(out)
}

fn items(
    questions: &[Question],
    parsed: &HashMap<String, Vec<Token>>,
    kernel: TreeKernel,
) -> Result<Vec<Item>> {
    let tokens = |text: &str| {
        parsed.get(text).with_context(|| {
            format!("no parse of the text {text:?}: run scripts/parse-shallow.py over this set")
        })
    };
    let mut out = Vec::new();
    for q in questions {
        let qt = tokens(&q.text)?;
        for c in &q.candidates {
            let (q_tree, a_tree) = pair_trees(qt, tokens(&c.text)?);
            out.push(Item {
                qq: kernel.kernel(&q_tree, &q_tree).max(1e-12),
                aa: kernel.kernel(&a_tree, &a_tree).max(1e-12),
                q: q_tree,
                a: a_tree,
            });
        }
    }
    Ok(out)
}

fn pair_kernel(kernel: TreeKernel, x: &Item, y: &Item) -> f64 {
    kernel.kernel(&x.q, &y.q) / (x.qq * y.qq).sqrt()
        + kernel.kernel(&x.a, &y.a) / (x.aa * y.aa).sqrt()
}

/// Rows `i` of `f(i)` computed on `threads` threads, in order.
fn parallel_rows<T: Send>(n: usize, threads: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let threads = threads.max(1);
    let mut parts: Vec<Vec<(usize, T)>> = Vec::new();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let f = &f;
                s.spawn(move || {
                    (t..n)
                        .step_by(threads)
                        .map(|i| (i, f(i)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        parts = handles
            .into_iter()
            .map(|h| h.join().expect("a kernel thread panicked"))
            .collect();
    });
    let mut all: Vec<(usize, T)> = parts.into_iter().flatten().collect();
    all.sort_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, v)| v).collect()
}

fn answered(path: &Path) -> Result<Vec<Question>> {
    Ok(read_questions(path)?
        .into_iter()
        .filter(|q| q.candidates.iter().any(|c| c.label == Some(true)))
        .collect())
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Writes `<out>/<name>.scores.jsonl`: one `{"id", "scores"}` line per question.
fn write_scores(out: &Path, name: &str, qs: &[Question], scores: &[Vec<f32>]) -> Result<()> {
    let mut lines = String::new();
    for (q, s) in qs.iter().zip(scores) {
        lines.push_str(&serde_json::json!({"id": q.id, "scores": s}).to_string());
        lines.push('\n');
    }
    ansel_model::write_atomic(&out.join(format!("{name}.scores.jsonl")), lines.as_bytes())?;
    Ok(())
}

pub fn run(args: TreeKernelArgs) -> Result<()> {
    if !(args.lambda > 0.0 && args.lambda <= 1.0) {
        bail!("--lambda must be in (0, 1]");
    }
    if !(args.mu > 0.0 && args.mu <= 1.0) {
        bail!("--mu must be in (0, 1]");
    }
    let kernel = match args.kernel {
        KernelKind::Ptk => TreeKernel::Partial(Ptk {
            lambda: args.lambda,
            mu: args.mu,
        }),
        KernelKind::Stk => TreeKernel::Subset(Stk {
            lambda: args.lambda,
        }),
    };
    let parsed = read_parsed(&args.parsed)?;
    let mut train_qs = answered(&args.train)?;
    if let Some(m) = args.max_train_questions {
        train_qs.truncate(m);
    }
    let start = Instant::now();
    let train = items(&train_qs, &parsed, kernel)?;
    let labels: Vec<bool> = train_qs
        .iter()
        .flat_map(|q| q.candidates.iter().map(|c| c.label == Some(true)))
        .collect();
    let n = train.len();
    let positives = labels.iter().filter(|&&l| l).count();
    if positives == 0 || positives == n {
        bail!(
            "{}: the SVM needs positive and negative training pairs; it has {positives} of {n} positive",
            args.train.display()
        );
    }
    eprintln!(
        "{n} training pairs ({positives} positive) from {} questions",
        train_qs.len()
    );
    let rows: Vec<Vec<f32>> = parallel_rows(n, args.threads, |i| {
        (0..=i)
            .map(|j| pair_kernel(kernel, &train[i], &train[j]) as f32)
            .collect()
    });
    let gram_seconds = start.elapsed().as_secs_f64();
    eprintln!("kernel matrix in {gram_seconds:.0} s");
    let k = |i: usize, j: usize| f64::from(if j <= i { rows[i][j] } else { rows[j][i] });
    let weight = args
        .positive_weight
        .unwrap_or((n - positives) as f64 / positives.max(1) as f64);
    let svm_start = Instant::now();
    let svm = Svm::train(
        &labels,
        k,
        SvmOptions {
            c: args.c,
            positive_weight: weight,
            ..Default::default()
        },
    );
    let svm_seconds = svm_start.elapsed().as_secs_f64();
    eprintln!(
        "{} support vectors, {} iterations, {svm_seconds:.0} s",
        svm.support.len(),
        svm.iterations
    );
    std::fs::create_dir_all(&args.out)?;
    let mut report = serde_json::json!({
        "arguments": &args,
        "train_pairs": n,
        "train_positives": positives,
        "positive_weight": weight,
        "support_vectors": svm.support.len(),
        "smo_iterations": svm.iterations,
        "kernel_matrix_seconds": gram_seconds,
        "svm_seconds": svm_seconds,
        "sets": {},
        "labelled": {},
    });
    let score = |qs: &[Question]| -> Result<Vec<Vec<f32>>> {
        let evaluated = items(qs, &parsed, kernel)?;
        let flat: Vec<f32> = parallel_rows(evaluated.len(), args.threads, |e| {
            svm.decision(|i| pair_kernel(kernel, &train[i], &evaluated[e])) as f32
        });
        Ok(ansel_model::per_question(qs, &flat))
    };
    for path in &args.eval {
        let qs = read_questions(path)?;
        let scores = score(&qs)?;
        let name = file_name(path);
        write_scores(&args.out, &name, &qs, &scores)?;
        let metrics = ansel_eval::evaluate(&qs, &scores, ansel_eval::Filter::Answered);
        let named: serde_json::Map<String, serde_json::Value> = metrics
            .named_metrics()
            .into_iter()
            .map(|(k, v)| (k, serde_json::json!(v)))
            .collect();
        eprintln!(
            "{name}: MAP {:.4} MRR {:.4} over {} questions",
            metrics.metric("MAP").unwrap_or(0.0),
            metrics.metric("MRR").unwrap_or(0.0),
            metrics.questions()
        );
        report["sets"][&name] = serde_json::Value::Object(named);
    }
    for path in &args.label {
        let mut qs = read_questions(path)?;
        let scores = score(&qs)?;
        let name = file_name(path);
        write_scores(&args.out, &name, &qs, &scores)?;
        let mut positives = 0;
        for (q, s) in qs.iter_mut().zip(&scores) {
            for (c, &v) in q.candidates.iter_mut().zip(s) {
                c.label = Some(v > 0.0);
                positives += usize::from(v > 0.0);
            }
        }
        let pairs: usize = qs.iter().map(|q| q.candidates.len()).sum();
        ansel_model::write_questions(&args.out.join(format!("{name}.labelled.jsonl")), &qs)?;
        eprintln!("{name}: {pairs} pairs labelled, {positives} positive");
        report["labelled"][&name] = serde_json::json!({"pairs": pairs, "positives": positives});
    }
    ansel_model::write_atomic(
        &args.out.join("report.json"),
        serde_json::to_string_pretty(&report)?.as_bytes(),
    )?;
    Ok(())
}
