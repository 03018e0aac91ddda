use super::DataArgs;
use ansel_data::readers::semeval;
use ansel_data::Question;
use ansel_model::write_atomic;
use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct ConvertArgs {
    #[command(flatten)]
    data: DataArgs,
    /// Output file (ansel JSON lines).
    #[arg(long)]
    out: PathBuf,
    /// SemEval data (`--task`): hold out a seeded random part of the original questions, whole
    /// (all their threads), and write it here; `--out` gets the rest. The split is recorded in
    /// `<tune-out>.split.json` (seed, fraction, the original question ids of each part).
    #[arg(long)]
    tune_out: Option<PathBuf>,
    /// The part of the original questions `--tune-out` gets (rounded; at least one).
    #[arg(long, default_value_t = 0.1, requires = "tune_out")]
    tune_fraction: f64,
    /// Seed of the `--tune-out` split.
    #[arg(long, default_value_t = 1, requires = "tune_out")]
    seed: u64,
}

pub fn run(args: ConvertArgs) -> Result<()> {
    let Some(tune_out) = &args.tune_out else {
        let questions = args.data.read()?;
        return write(&args.out, &questions);
    };
    let Some(task) = args.data.semeval_task()? else {
        bail!("--tune-out splits SemEval data by original question: pass --task a|b|c");
    };
    if !(0.0..1.0).contains(&args.tune_fraction) {
        bail!(
            "--tune-fraction must be in [0, 1), got {}",
            args.tune_fraction
        );
    }
    let path = &args.data.data;
    let bytes = ansel_data::read_bytes(path)?;
    let file = semeval::parse_file(path, &bytes).context("cannot read data")?;
    let (train, tune) = file.split_originals(args.tune_fraction, args.seed);
    write(&args.out, &train.task_questions(path, task)?)?;
    write(tune_out, &tune.task_questions(path, task)?)?;
    let ids = |f: &semeval::CqaFile| -> Vec<String> {
        f.originals
            .iter()
            .map(|o| o.id.clone())
            .chain(f.loose_threads.iter().map(|t| t.id.clone()))
            .collect()
    };
    let record = serde_json::json!({
        "data": path.display().to_string(),
        "task": task.name(),
        "seed": args.seed,
        "tune_fraction": args.tune_fraction,
        "split_by": if file.originals.is_empty() { "thread" } else { "original question" },
        "train": ids(&train),
        "tune": ids(&tune),
    });
    let record_path = PathBuf::from(format!("{}.split.json", tune_out.display()));
    write_atomic(&record_path, format!("{record:#}\n").as_bytes())?;
    eprintln!(
        "split {} by original question with seed {}: {} to {}, {} to {} (recorded in {})",
        path.display(),
        args.seed,
        ids(&train).len(),
        args.out.display(),
        ids(&tune).len(),
        tune_out.display(),
        record_path.display()
    );
    Ok(())
}

fn write(out: &Path, questions: &[Question]) -> Result<()> {
    ansel_model::write_questions(out, questions)?;
    let candidates: usize = questions.iter().map(|q| q.candidates.len()).sum();
    eprintln!(
        "wrote {} questions, {candidates} candidates to {}",
        questions.len(),
        out.display()
    );
    Ok(())
}
