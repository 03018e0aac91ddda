//! The native forward pass scores the committed efficient models as libtorch does: 50 WikiQA dev
//! questions per model, the largest score difference at most 1e-3 (here ~1e-6; a loaded CI machine
//! once saw 1.8e-4 from libtorch's multi-threaded float sums, so libtorch runs one thread and the
//! bound leaves room for summation order, far below any difference a wrong layer makes). Skipped
//! where the benchmark data (`../shared/data` beside the repository) is missing.

use ansel_efficient::{Backend, EfficientRanker};
use ansel_model::{ModelCard, Ranker};
use std::path::Path;

const MODELS: &[&str] = &[
    "cosinenet-wikiqa",
    "cosinenet-wikiqa-distilled",
    "compare-aggregate-wikiqa",
];

#[test]
fn committed_models_score_the_same_natively_and_on_libtorch() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let data = root.join("../shared/data/wikiqa/WikiQA-dev.tsv");
    if !data.is_file() {
        eprintln!("skipped: {} is missing", data.display());
        return;
    }
    let questions: Vec<_> = ansel_data::read_path(&data, None)
        .unwrap()
        .into_iter()
        .filter(|q| !q.candidates.is_empty())
        .take(50)
        .collect();
    assert_eq!(questions.len(), 50);
    ansel_torch::tch::set_num_threads(1);
    for name in MODELS {
        let dir = root.join("models").join(name);
        let card = ModelCard::read(&dir).unwrap();
        let native = EfficientRanker::load_with(&dir, &card, Backend::Native).unwrap();
        let torch = EfficientRanker::load_with(&dir, &card, Backend::Libtorch).unwrap();
        assert_eq!(native.parameters(), torch.parameters(), "{name}");
        let (n, t) = (
            native.score_all(&questions).unwrap(),
            torch.score_all(&questions).unwrap(),
        );
        // One question at a time scores as the batch does.
        assert_eq!(native.score(&questions[7]).unwrap(), n[7], "{name}");
        let mut worst = 0f32;
        for (a, b) in n.iter().zip(&t) {
            assert_eq!(a.len(), b.len(), "{name}");
            for (x, y) in a.iter().zip(b) {
                worst = worst.max((x - y).abs());
            }
        }
        eprintln!("{name}: largest |native - libtorch| over 50 WikiQA dev questions {worst:e}");
        assert!(worst <= 1e-3, "{name}: scores differ by {worst}");
    }
}
