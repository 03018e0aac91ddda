use super::DataArgs;
use ansel_model::write_atomic;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct ConvertArgs {
    #[command(flatten)]
    data: DataArgs,
    /// Output file (ansel JSON lines).
    #[arg(long)]
    out: PathBuf,
}

pub fn run(args: ConvertArgs) -> Result<()> {
    let questions = args.data.read()?;
    let mut bytes = Vec::new();
    ansel_data::readers::jsonl::write(&mut bytes, &questions)?;
    write_atomic(&args.out, &bytes)?;
    let candidates: usize = questions.iter().map(|q| q.candidates.len()).sum();
    eprintln!(
        "wrote {} questions, {candidates} candidates to {}",
        questions.len(),
        args.out.display()
    );
    Ok(())
}
