use super::*;
use ansel_data::Candidate;

/// Width of the synthetic `[CLS]` states.
const CLS_DIM: usize = 12;

/// A deterministic pseudo-random stream for synthetic data.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// `n` questions of 6 candidates; candidate 0..2 positive with some chance; base scores are
/// noisy logits of the label; vectors are random unit vectors in 8 dimensions; `[CLS]` states
/// random vectors in [`CLS_DIM`] dimensions.
fn synthetic(n: usize, seed: u64, prefix: &str) -> Prepared {
    let mut r = Lcg(seed);
    let mut questions = Vec::new();
    let mut scores = Vec::new();
    let mut vectors = Vec::new();
    for q in 0..n {
        let mut cands = Vec::new();
        let mut s = Vec::new();
        for c in 0..6 {
            let label = c == q % 6 || r.next() < 0.1;
            s.push(if label { 1.0 } else { -1.0 } + 3.0 * (r.next() - 0.5));
            cands.push(Candidate {
                id: format!("{prefix}{q}-{c}"),
                text: format!("answer {c} of {q}"),
                label: Some(label),
                context: None,
            });
        }
        questions.push(Question {
            id: format!("{prefix}{q}"),
            text: format!("question {q}"),
            candidates: cands,
        });
        scores.push(s);
        let mut v: Vec<f32> = (0..8).map(|_| r.next() - 0.5).collect();
        search::normalise(&mut v);
        vectors.extend(v);
    }
    let answers: Vec<f32> = (0..n * 6)
        .flat_map(|_| {
            let mut v: Vec<f32> = (0..8).map(|_| r.next() - 0.5).collect();
            search::normalise(&mut v);
            v
        })
        .collect();
    let cls: Vec<f32> = (0..n * 6 * CLS_DIM).map(|_| r.next() - 0.5).collect();
    Prepared {
        questions,
        scores,
        vectors,
        answers: Some(answers),
        cls: Some(cls),
        extra: Vec::new(),
    }
}

/// The nodes' rows of 5 extra features (a scalar, then 4 PCA columns) of 60 synthetic
/// training questions, after asserting that each PCA column has mean 0 and variance 1.
fn whitened_rows(features: &[Vec<f32>]) -> Vec<&[f32]> {
    let rows: Vec<&[f32]> = features.iter().flat_map(|q| q.chunks_exact(5)).collect();
    assert_eq!(rows.len(), 360);
    let n = rows.len() as f32;
    for c in 1..5 {
        let mean = rows.iter().map(|r| r[c]).sum::<f32>() / n;
        let var = rows.iter().map(|r| (r[c] - mean).powi(2)).sum::<f32>() / (n - 1.0);
        assert!(
            mean.abs() < 1e-3 && (var - 1.0).abs() < 1e-2,
            "{c}: {mean} {var}"
        );
    }
    rows
}

/// Feature names as `--node-features` lists them.
fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// No lexical ranker is asked for by the vector features under test.
fn none(_: &str) -> Result<Box<dyn Ranker>> {
    Ok(Box::new(Length))
}

/// A vector feature (`pair-vec`, `cls-vec`) whose PCA is not fitted yet: it has its default
/// width, and neither its features nor a model over them can be built. Returns the features'
/// error.
fn unfitted_error(train: &Prepared, feature: &str) -> String {
    let unfitted = Extras::new(&names(&[feature]), none).unwrap();
    assert_eq!(unfitted.len(), features::PAIR_VEC_DIMS);
    assert!(built(train, &params(Variant::Ta), false, &unfitted).is_err());
    train
        .extra_features(&unfitted, 8)
        .err()
        .unwrap()
        .to_string()
}

/// `p` with every candidate's label flipped.
fn labels_flipped(p: &Prepared) -> Prepared {
    let mut flipped = p.clone();
    for q in &mut flipped.questions {
        for c in &mut q.candidates {
            c.label = c.label.map(|l| !l);
        }
    }
    flipped
}

/// `model` saved into a fresh folder and loaded back: the folder (removed when dropped), the
/// model directory, its card and the loaded model.
fn saved_and_loaded(model: &Eqag) -> (tempfile::TempDir, PathBuf, ModelCard, Eqag) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m");
    model
        .save(&out, "x", ansel_model::TrainingRecord::default())
        .unwrap();
    let card = ModelCard::read(&out).unwrap();
    let back = Eqag::load(&out, &card).unwrap();
    (dir, out, card, back)
}

/// Question `i` of a [`synthetic`] set alone (6 candidates, 8-dimensional vectors).
fn question_alone(p: &Prepared, i: usize) -> Prepared {
    Prepared {
        questions: vec![p.questions[i].clone()],
        scores: vec![p.scores[i].clone()],
        vectors: p.vectors[i * 8..(i + 1) * 8].to_vec(),
        answers: p
            .answers
            .as_ref()
            .map(|a| a[i * 6 * 8..(i + 1) * 6 * 8].to_vec()),
        cls: p
            .cls
            .as_ref()
            .map(|c| c[i * 6 * CLS_DIM..(i + 1) * 6 * CLS_DIM].to_vec()),
        extra: Vec::new(),
    }
}

/// A label-free test ranker: the candidate text's length.
struct Length;

impl Ranker for Length {
    fn name(&self) -> &str {
        "len"
    }
    fn score(&self, q: &Question) -> Result<Vec<f32>> {
        Ok(q.candidates.iter().map(|c| c.text.len() as f32).collect())
    }
}

fn extras() -> Extras {
    let names: Vec<String> = ["base", "cos", "len"].map(String::from).to_vec();
    Extras::new(&names, |n| {
        assert_eq!(n, "len");
        Ok(Box::new(Length))
    })
    .unwrap()
}

/// `synthetic` with the extra node features of `extras()`.
fn with_extras(mut p: Prepared) -> Prepared {
    p.extra = p.extra_features(&extras(), 8).unwrap();
    p
}

fn params(variant: Variant) -> GraphParams {
    GraphParams {
        variant,
        k_intra: 3,
        th_intra: 0.3,
        k_rows: 4,
        k_inter: 5,
        th_inter: 0.5,
        inter_by: InterBy::Row,
        directed_inter: false,
    }
}

fn fitted(variant: Variant, random_init: bool) -> (Eqag, Prepared) {
    fitted_by(variant, random_init, InterBy::Row)
}

/// A model over `train` before fitting (sigmoid node feature, 8-d question vectors; the base
/// and encoder names are only recorded).
fn built(
    train: &Prepared,
    params: &GraphParams,
    random_init: bool,
    extras: &Extras,
) -> Result<Eqag> {
    build(
        train,
        params,
        Feature::Sigmoid,
        random_init,
        "b",
        false,
        "e",
        8,
        extras,
    )
}

/// The small GCN the fitting tests train: `epochs` epochs, dev checked every 10.
fn fit_options(epochs: usize, fit_on_dev: bool) -> FitOptions {
    FitOptions {
        hidden: 4,
        root: true,
        lr: 0.05,
        epochs,
        eval_every: 10,
        patience: 5,
        min_epochs: 0,
        fit_on_dev,
        seed: 7,
    }
}

fn fitted_by(variant: Variant, random_init: bool, inter_by: InterBy) -> (Eqag, Prepared) {
    let train = synthetic(60, 1, "t");
    let dev = synthetic(15, 2, "d");
    let mut model = built(
        &train,
        &GraphParams {
            inter_by,
            ..params(variant)
        },
        random_init,
        &Extras::default(),
    )
    .unwrap();
    let opts = fit_options(30, false);
    fit(&mut model, &dev, &opts).unwrap();
    (model, dev)
}

#[test]
fn labels_of_unseen_questions_cannot_change_their_scores() {
    let all = [Variant::Ta, Variant::TPlus, Variant::TPlusMinus];
    for (variant, by) in all
        .iter()
        .flat_map(|&v| [(v, InterBy::Row), (v, InterBy::Answer)])
    {
        let (model, _) = fitted_by(variant, false, by);
        let test = synthetic(20, 3, "x");
        let before = score_prepared(&model, &test);
        // Flip every test label, then remove them: scores and graphs must not move.
        for change in [Some(true), None] {
            let mut changed = Prepared {
                questions: test.questions.clone(),
                scores: test.scores.clone(),
                vectors: test.vectors.clone(),
                answers: test.answers.clone(),
                cls: test.cls.clone(),
                extra: test.extra.clone(),
            };
            for q in &mut changed.questions {
                for c in &mut q.candidates {
                    c.label = change.map(|_| !c.label.unwrap());
                }
            }
            assert_eq!(score_prepared(&model, &changed), before, "{variant:?}");
        }
        // Each question is scored on its own: scoring one alone gives the same scores.
        let one = question_alone(&test, 5);
        assert_eq!(score_prepared(&model, &one)[0], before[5]);
    }
}

#[test]
fn the_graph_step_changes_scores_and_training_labels_shape_the_t_plus_graph() {
    let (model, _) = fitted(Variant::TPlus, false);
    let test = synthetic(20, 3, "x");
    let scores = score_prepared(&model, &test);
    let base: Vec<Vec<f32>> = test.scores.clone();
    assert_ne!(scores, base);
    // T+ reaches positive training answers only: every inter-row edge ends at a positive.
    let f = Feature::Sigmoid.apply(&test.scores[0]);
    let e = model.row_edges(&f, None, &test.vectors[0..8]);
    assert!(!e.inter.is_empty());
    assert!(e
        .inter
        .iter()
        .all(|&(_, node, _)| model.stored.labels[node]));
}

#[test]
fn model_directory_round_trips() {
    let (model, dev) = fitted_by(Variant::TPlusMinus, false, InterBy::Answer);
    let (_dir, out, card, back) = saved_and_loaded(&model);
    assert_eq!(card.kind, KIND);
    assert_eq!(score_prepared(&back, &dev), score_prepared(&model, &dev));
    // A truncated vectors file is reported with its path.
    std::fs::write(out.join(VECTORS_FILE), [0u8; 6]).unwrap();
    let err = Eqag::load(&out, &card).err().unwrap().to_string();
    assert!(err.contains(VECTORS_FILE), "{err}");
}

#[test]
fn random_init_ignores_base_scores() {
    let (model, _) = fitted(Variant::TPlus, true);
    let test = synthetic(10, 3, "x");
    let mut other = Prepared {
        questions: test.questions.clone(),
        scores: test
            .scores
            .iter()
            .map(|s| s.iter().map(|v| -v).collect())
            .collect(),
        vectors: test.vectors.clone(),
        answers: None,
        cls: None,
        extra: Vec::new(),
    };
    assert_eq!(
        score_prepared(&model, &other),
        score_prepared(&model, &test)
    );
    other.questions[0].candidates[0].text.push('!');
    assert_ne!(
        score_prepared(&model, &other)[0],
        score_prepared(&model, &test)[0]
    );
    let a = random_feature("q", "a");
    assert!(
        (0.0..1.0).contains(&a) && a == random_feature("q", "a") && a != random_feature("q", "b")
    );
}

#[test]
fn answer_edges_follow_answer_similarity() {
    let (model, _) = fitted_by(Variant::TPlus, false, InterBy::Answer);
    let test = synthetic(5, 3, "x");
    let f = Feature::Sigmoid.apply(&test.scores[0]);
    let a = test.answers.as_deref().unwrap();
    let e = model.row_edges(&f, Some(&a[..6 * 8]), &test.vectors[0..8]);
    assert!(!e.inter.is_empty());
    // Each edge's weight is the cosine of the two answers, and only positives are reached.
    let theirs = model.answers.as_deref().unwrap();
    for &(i, node, w) in &e.inter {
        let cos: f32 = (0..8).map(|k| a[i * 8 + k] * theirs[node * 8 + k]).sum();
        assert!((cos - w).abs() < 1e-6 && w > 0.0 && model.stored.labels[node]);
    }
}

#[test]
fn fitting_on_dev_rows_uses_half_of_dev_and_keeps_test_labels_out() {
    let train = synthetic(60, 1, "t");
    let dev = synthetic(16, 2, "d");
    let (a, b) = dev.split_alternate();
    assert_eq!((a.questions.len(), b.questions.len()), (8, 8));
    assert_eq!(a.questions[1].id, "d2");
    assert_eq!(
        b.answers.as_ref().unwrap()[..8],
        dev.answers.as_ref().unwrap()[6 * 8..7 * 8]
    );
    let mut model = built(&train, &params(Variant::Ta), false, &Extras::default()).unwrap();
    let opts = fit_options(20, true);
    let fit = fit(&mut model, &dev, &opts).unwrap();
    assert_eq!(fit.dev.questions(), 8);
    // The stored graph is the training graph alone: dev rows are not kept.
    assert_eq!(model.graph.nodes(), 60 * 6);
    let test = synthetic(10, 3, "x");
    let before = score_prepared(&model, &test);
    assert_eq!(score_prepared(&model, &labels_flipped(&test)), before);
}

#[test]
fn relative_paths_walk_up_from_the_model_directory() {
    let p = relative_path(Path::new("models/base"), Path::new("runs/x/eqag"));
    assert_eq!(p, PathBuf::from("../../../models/base"));
    let p = relative_path(Path::new("./vendor/m"), Path::new("models/e"));
    assert_eq!(p, PathBuf::from("../../vendor/m"));
}

/// A model with the extra node features of `extras()`, fitted on training nodes or dev rows.
fn fitted_with_extras(fit_on_dev: bool) -> (Eqag, Prepared) {
    let train = with_extras(synthetic(60, 1, "t"));
    let dev = with_extras(synthetic(16, 2, "d"));
    let mut model = built(&train, &params(Variant::TPlus), false, &extras()).unwrap();
    let opts = fit_options(30, fit_on_dev);
    fit(&mut model, &dev, &opts).unwrap();
    (model, dev)
}

#[test]
fn extra_node_features_are_standardised_per_question_and_label_free() {
    let test = synthetic(4, 3, "x");
    let x = extras();
    let a = test.answers.as_deref().unwrap();
    let q = &test.questions[1];
    let f = x
        .of_question(
            q,
            &test.scores[1],
            &test.vectors[8..16],
            Some(&a[6 * 8..12 * 8]),
            None,
        )
        .unwrap();
    assert_eq!(f.len(), 6 * 3);
    // Column 0 is the z-score of the base scores: mean 0, variance 1, same order.
    let col: Vec<f32> = (0..6).map(|i| f[i * 3]).collect();
    let mean = col.iter().sum::<f32>() / 6.0;
    let var = col.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / 6.0;
    assert!(mean.abs() < 1e-5 && (var - 1.0).abs() < 1e-4, "{col:?}");
    for i in 0..6 {
        for j in 0..6 {
            assert_eq!(
                test.scores[1][i] < test.scores[1][j],
                col[i] < col[j],
                "{col:?}"
            );
        }
    }
    // Column 1 orders candidates by their cosine with the question.
    let cos = |i: usize| -> f32 {
        (0..8)
            .map(|k| a[(6 + i) * 8 + k] * test.vectors[8 + k])
            .sum()
    };
    assert_eq!(cos(0) < cos(1), f[3 + 1] > f[1]);
    // Column 2 (candidate lengths all equal here) is constant: 0, not NaN.
    assert!((0..6).all(|i| f[i * 3 + 2] == 0.0));
    assert!(x.needs_answers());
    // Labels do not enter.
    let mut flipped = q.clone();
    for c in &mut flipped.candidates {
        c.label = None;
    }
    let g = x
        .of_question(
            &flipped,
            &test.scores[1],
            &test.vectors[8..16],
            Some(&a[6 * 8..12 * 8]),
            None,
        )
        .unwrap();
    assert_eq!(f, g);
    // A repeated column and a missing answer vector are errors, not panics.
    let twice: Vec<String> = ["base", "base"].map(String::from).to_vec();
    assert!(Extras::new(&twice, |_| Ok(Box::new(Length))).is_err());
    assert!(x
        .of_question(q, &test.scores[1], &test.vectors[8..16], None, None)
        .is_err());
}

#[test]
fn extra_features_keep_test_labels_out_and_round_trip() {
    for fit_on_dev in [false, true] {
        let (model, dev) = fitted_with_extras(fit_on_dev);
        assert_eq!(model.inputs(), 4);
        assert_eq!(model.gcn.w1.len(), 4 * 4);
        let test = with_extras(synthetic(12, 3, "x"));
        let before = score_prepared(&model, &test);
        // The extra columns change the scores...
        let mut shuffled = test.clone();
        for e in &mut shuffled.extra {
            e.reverse();
        }
        assert_ne!(score_prepared(&model, &shuffled), before);
        // ...test labels do not, and neither do the other test questions.
        let flipped = with_extras(labels_flipped(&test));
        assert_eq!(score_prepared(&model, &flipped), before);
        let one = with_extras(question_alone(&test, 4));
        assert_eq!(score_prepared(&model, &one)[0], before[4]);
        // Save and load: same scores; a card whose columns disagree with the rows is refused.
        let (_dir, out, card, back) = saved_and_loaded(&model);
        assert_eq!(back.config.node_features, extras().names);
        assert_eq!(score_prepared(&back, &dev), score_prepared(&model, &dev));
        let mut bad = card.clone();
        bad.config["node_features"] = serde_json::json!(["base"]);
        let err = Eqag::load(&out, &bad).err().unwrap().to_string();
        assert!(err.contains(ROWS_FILE), "{err}");
    }
}

#[test]
fn a_training_set_without_its_extra_columns_is_refused() {
    let train = synthetic(10, 1, "t");
    let err = built(&train, &params(Variant::Ta), false, &extras())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("extra features"), "{err}");
}

/// Undirected T+ inter-row edges give training labels away: besides a row's own top nodes
/// (which send), only stored positives get edges from other rows. Directed edges leave
/// other-row edges on the sending top nodes only, chosen by feature, never by label.
#[test]
fn directed_inter_edges_keep_labels_out_of_the_training_graph() {
    let train = synthetic(60, 1, "t");
    for directed in [false, true] {
        let model = built(
            &train,
            &GraphParams {
                directed_inter: directed,
                ..params(Variant::TPlus)
            },
            false,
            &Extras::default(),
        )
        .unwrap();
        let rows = &model.stored.rows;
        let n = model.stored.features.len();
        let mut row_of = vec![0; n];
        for (r, row) in rows.iter().enumerate() {
            row_of[row.start..row.start + row.len].fill(r);
        }
        let tr = model.train_rows();
        let mut senders = std::collections::BTreeSet::new();
        for (r, row) in rows.iter().enumerate() {
            let e = graph::row_edges(
                &model.stored.features[row.start..row.start + row.len],
                None,
                &model.stored.neighbours[r],
                &tr,
                &model.config.graph,
            );
            assert_eq!(e.directed_inter, directed);
            senders.extend(e.inter.iter().map(|&(a, _, _)| row.start + a));
        }
        let receivers: std::collections::BTreeSet<usize> = (0..n)
            .filter(|&i| {
                model.graph.adj[i]
                    .iter()
                    .any(|&(j, _)| row_of[j] != row_of[i])
            })
            .collect();
        assert!(!senders.is_empty());
        if directed {
            assert_eq!(receivers, senders);
        } else {
            let extra: Vec<usize> = receivers.difference(&senders).copied().collect();
            assert!(!extra.is_empty());
            assert!(extra.iter().all(|&i| model.stored.labels[i]), "{extra:?}");
        }
    }
}

/// Extras [base, pair-vec:4] with the PCA fitted on `train`'s nodes.
fn pair_extras(train: &Prepared) -> Extras {
    vec_extras(train, NodeVec::Pair)
}

/// Extras [base, KIND:4] (`pair-vec:4` or `cls-vec:4`) with the PCA fitted on `train`'s nodes.
fn vec_extras(train: &Prepared, kind: NodeVec) -> Extras {
    let names: Vec<String> = vec!["base".into(), format!("{}:4", kind.name())];
    let mut x = Extras::new(&names, |n| {
        Err(ModelError::Backend(format!("no ranker {n} in this test")))
    })
    .unwrap();
    match kind {
        NodeVec::Pair => {
            let a = train.answers.as_deref().unwrap();
            x.fit_pair_pca(&train.questions, &train.vectors, a, 8)
                .unwrap();
        }
        NodeVec::Cls => {
            x.fit_cls_pca(train.cls.as_deref().unwrap(), CLS_DIM)
                .unwrap();
        }
    }
    x
}

#[test]
fn pair_vec_columns_are_whitened_pca_of_training_pairs_and_label_free() {
    let train = synthetic(60, 1, "t");
    let x = pair_extras(&train);
    assert_eq!(x.len(), 5);
    assert!(x.needs_answers());
    let pca = x.pca(NodeVec::Pair).unwrap();
    assert!(pca.consistent(16, 4));
    assert!(
        pca.variance.windows(2).all(|w| w[0] >= w[1]),
        "{:?}",
        pca.variance
    );
    // Over the training nodes each component has mean 0 and variance 1, and two components
    // are uncorrelated.
    let f = train.extra_features(&x, 8).unwrap();
    let rows = whitened_rows(&f);
    let cov = rows.iter().map(|r| r[1] * r[2]).sum::<f32>() / (rows.len() as f32 - 1.0);
    assert!(cov.abs() < 1e-2, "{cov}");
    // The columns differ between a question's candidates (unlike a scalar per question)...
    let q0: Vec<f32> = f[0].chunks_exact(5).map(|r| r[1]).collect();
    assert!(q0.iter().any(|v| (v - q0[0]).abs() > 1e-3), "{q0:?}");
    // ...and are the projection of [q*a ; |q-a|].
    let a = train.answers.as_deref().unwrap();
    let pair = features::pair_vector(&train.vectors[..8], &a[8..16]);
    assert_eq!(pair[0], train.vectors[0] * a[8]);
    assert_eq!(pair[8], (train.vectors[0] - a[8]).abs());
    assert_eq!(&f[0][5 + 1..5 + 5], pca.project(&pair).as_slice());
    // Labels reach neither the PCA nor the features.
    let mut unlabelled = train.clone();
    for q in &mut unlabelled.questions {
        for c in &mut q.candidates {
            c.label = None;
        }
    }
    let y = pair_extras(&unlabelled);
    assert_eq!(y.pca(NodeVec::Pair), x.pca(NodeVec::Pair));
    assert_eq!(unlabelled.extra_features(&y, 8).unwrap(), f);
    // Errors, not panics: no PCA yet, a bad N, two pair-vec columns, a PCA of another size.
    let err = unfitted_error(&train, "pair-vec");
    assert!(err.contains("PCA"), "{err}");
    assert!(Extras::new(&names(&["pair-vec:0"]), none).is_err());
    assert!(Extras::new(&names(&["pair-vec:x"]), none).is_err());
    assert!(Extras::new(&names(&["pair-vec", "pair-vec:4"]), none).is_err());
    assert_eq!(
        features::width(&names(&["base", "pair-vec:7", "wo"])).unwrap(),
        9
    );
    let mut other = Extras::new(&names(&["pair-vec:3"]), none).unwrap();
    assert!(other
        .set_pca(NodeVec::Pair, x.pca(NodeVec::Pair).cloned())
        .is_err());
}

#[test]
fn cls_vec_columns_are_whitened_pca_of_training_cls_states_and_label_free() {
    let train = synthetic(60, 1, "t");
    let x = vec_extras(&train, NodeVec::Cls);
    assert_eq!(x.len(), 5);
    assert!(x.needs_cls() && !x.needs_answers());
    let pca = x.pca(NodeVec::Cls).unwrap();
    assert!(pca.consistent(CLS_DIM, 4));
    assert!(x.pca(NodeVec::Pair).is_none());
    // Over the training nodes each component has mean 0 and variance 1.
    let f = train.extra_features(&x, 8).unwrap();
    whitened_rows(&f);
    // The columns are the projection of each candidate's own [CLS] state (question 1,
    // candidate 2: node 8), not a pair vector.
    let cls = train.cls.as_deref().unwrap();
    assert_eq!(
        &f[1][2 * 5 + 1..3 * 5],
        pca.project(&cls[8 * CLS_DIM..9 * CLS_DIM]).as_slice()
    );
    // Labels reach neither the PCA nor the features.
    let mut unlabelled = train.clone();
    for q in &mut unlabelled.questions {
        for c in &mut q.candidates {
            c.label = None;
        }
    }
    let y = vec_extras(&unlabelled, NodeVec::Cls);
    assert_eq!(y.pca(NodeVec::Cls), x.pca(NodeVec::Cls));
    assert_eq!(unlabelled.extra_features(&y, 8).unwrap(), f);
    // Split halves keep each node's state with it.
    let (even, _) = train.split_alternate();
    assert_eq!(
        &even.cls.as_deref().unwrap()[6 * CLS_DIM..7 * CLS_DIM],
        &cls[12 * CLS_DIM..13 * CLS_DIM]
    );
    assert_eq!(even.extra_features(&x, 8).unwrap()[1], f[2]);
    // Errors, not panics: no states, states of another width, no PCA, a bad N, two columns.
    let mut stateless = train.clone();
    stateless.cls = None;
    let err = stateless.extra_features(&x, 8).err().unwrap().to_string();
    assert!(err.contains("[CLS]"), "{err}");
    let mut narrow = train.clone();
    narrow.cls = Some(vec![0.0; 360 * (CLS_DIM - 1)]);
    assert!(narrow.extra_features(&x, 8).is_err());
    let err = unfitted_error(&train, "cls-vec");
    assert!(err.contains("cls-vec") && err.contains("PCA"), "{err}");
    for bad in [&["cls-vec:0"][..], &["cls-vec:"], &["cls-vec", "cls-vec:4"]] {
        let err = Extras::new(&names(bad), none).err().unwrap().to_string();
        assert!(err.contains("cls-vec"), "{err}");
    }
    // pair-vec and cls-vec side by side: each its own PCA and columns.
    let both = Extras::new(&names(&["pair-vec:2", "cls-vec:3"]), none).unwrap();
    assert_eq!(both.len(), 5);
    assert_eq!(
        features::width(&names(&["base", "pair-vec:2", "cls-vec:3"])).unwrap(),
        6
    );
    let mut other = Extras::new(&names(&["cls-vec:3"]), none).unwrap();
    assert!(other
        .set_pca(NodeVec::Cls, x.pca(NodeVec::Cls).cloned())
        .is_err());
}

#[test]
fn vector_feature_models_keep_test_labels_out_and_round_trip_with_their_pca() {
    for (kind, fit_on_dev) in [
        (NodeVec::Pair, false),
        (NodeVec::Pair, true),
        (NodeVec::Cls, false),
        (NodeVec::Cls, true),
    ] {
        let mut train = synthetic(60, 1, "t");
        let x = vec_extras(&train, kind);
        train.extra = train.extra_features(&x, 8).unwrap();
        let mut dev = synthetic(16, 2, "d");
        dev.extra = dev.extra_features(&x, 8).unwrap();
        let p = GraphParams {
            inter_by: InterBy::Answer,
            ..params(Variant::TPlus)
        };
        let mut model = built(&train, &p, false, &x).unwrap();
        assert_eq!(model.inputs(), 6);
        fit(&mut model, &dev, &fit_options(30, fit_on_dev)).unwrap();
        let mut test = synthetic(12, 3, "x");
        test.extra = test.extra_features(&x, 8).unwrap();
        let before = score_prepared(&model, &test);
        // The vector columns (values 1..5 of a node's 5 extras) change the scores...
        let mut shifted = test.clone();
        for e in &mut shifted.extra {
            for r in e.chunks_exact_mut(5) {
                r[2] += 1.0;
            }
        }
        assert_ne!(score_prepared(&model, &shifted), before);
        // ...test labels do not (features recomputed from the flipped questions).
        let mut flipped = labels_flipped(&test);
        flipped.extra = flipped.extra_features(&x, 8).unwrap();
        assert_eq!(score_prepared(&model, &flipped), before);
        // Save and load: the PCA comes back, and the scores are the same.
        let (_dir, out, card, back) = saved_and_loaded(&model);
        assert_eq!(back.pcas.len(), 1);
        assert_eq!(back.pcas[0].0, kind);
        assert_eq!(Some(&back.pcas[0].1), x.pca(kind));
        assert_eq!(score_prepared(&back, &test), before);
        let mut y = Extras::new(&back.config.node_features, |_| Ok(Box::new(Length))).unwrap();
        y.set_pca(kind, Some(back.pcas[0].1.clone())).unwrap();
        assert_eq!(test.extra_features(&y, 8).unwrap(), test.extra);
        // Only this kind's PCA file is written; a missing or mis-sized one is reported by name.
        let other = NodeVec::ALL.into_iter().find(|k| *k != kind).unwrap();
        assert!(!out.join(other.file()).exists());
        let pca_file = out.join(kind.file());
        let mut small = back.pcas[0].1.clone();
        small.mean.pop();
        std::fs::write(&pca_file, serde_json::to_vec(&small).unwrap()).unwrap();
        let err = Eqag::load(&out, &card).err().unwrap().to_string();
        assert!(err.contains(kind.file()), "{err}");
        std::fs::remove_file(&pca_file).unwrap();
        let err = Eqag::load(&out, &card).err().unwrap().to_string();
        assert!(err.contains(kind.file()), "{err}");
    }
}

/// A tiny random cross-encoder model directory (`kind` on its card) for the `[CLS]` encoder.
fn tiny_cross_encoder(dir: &Path, kind: &str) -> PathBuf {
    let base = ansel_bert::testing::tiny_base(dir, 0.0);
    let config = serde_json::json!({"input": "pair", "max_len": 32, "batch_size": 3});
    ModelCard::new(kind, "tiny", config).write(&base).unwrap();
    base
}

#[test]
fn cls_encoder_reads_the_base_cross_encoders_cls_state_and_caches_it() {
    use ansel_bert::testing::question;
    let _guard = ansel_bert::testing::serial();
    let tmp = tempfile::tempdir().unwrap();
    let base = tiny_cross_encoder(tmp.path(), ansel_bert::KIND);
    let spec = base.display().to_string();
    let questions = vec![
        question(
            "q1",
            "who wrote hamlet ?",
            &[
                ("it was written by william shakespeare .", true),
                ("a play", false),
            ],
        ),
        question(
            "q2",
            "hamlet is set in denmark",
            &[
                ("the tragedy", false),
                ("it is set in denmark .", true),
                ("by", false),
            ],
        ),
    ];
    let mut enc = ClsEncoder::for_base(&spec).unwrap();
    let states = enc.encode(&questions).unwrap();
    assert_eq!(states.len(), 5 * enc.dim);
    // Each state is the last layer's position 0 of that pair alone (batching and padding
    // with other pairs do not change it), and pairs differ.
    let ranker =
        ansel_bert::CrossEncoderRanker::load(&base, &ModelCard::read(&base).unwrap()).unwrap();
    let items = ranker.encode_all(&questions).unwrap();
    for (i, item) in items.iter().enumerate() {
        let one = ranker.cls_states(std::slice::from_ref(item));
        let got = &states[i * enc.dim..(i + 1) * enc.dim];
        let diff = one
            .iter()
            .zip(got)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
        assert!(diff < 1e-4, "pair {i}: {diff}");
    }
    assert_ne!(&states[..enc.dim], &states[enc.dim..2 * enc.dim]);
    // Labels do not enter.
    let mut flipped = questions.clone();
    for q in &mut flipped {
        for c in &mut q.candidates {
            c.label = c.label.map(|l| !l);
        }
    }
    assert_eq!(enc.encode(&flipped).unwrap(), states);
    // The cache: written once, then read (the same numbers, the file does not grow)...
    let cache = tmp.path().join("cls.bin");
    enc.cache = Some(cache.clone());
    let first = enc.encode(&questions).unwrap();
    let len = std::fs::metadata(&cache).unwrap().len();
    assert_eq!(len as usize, 5 * (8 + 4 * enc.dim));
    assert_eq!(enc.encode(&questions).unwrap(), first);
    assert_eq!(std::fs::metadata(&cache).unwrap().len(), len);
    let diff = first
        .iter()
        .zip(&states)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f32::max);
    assert!(diff < 1e-5, "{diff}");
    // ...and never serves another base's states: a changed card is another key.
    let mut card = ModelCard::read(&base).unwrap();
    card.name = "tiny-retrained".into();
    card.write(&base).unwrap();
    let mut other = ClsEncoder::for_base(&spec).unwrap();
    other.cache = Some(cache.clone());
    other.encode(&questions).unwrap();
    assert_eq!(std::fs::metadata(&cache).unwrap().len(), 2 * len);
    // Only a cross-encoder directory has a [CLS] state: the errors name the option.
    let err = ClsEncoder::for_base("wo").err().unwrap().to_string();
    assert!(
        err.contains("cls-vec") && err.contains("cross-encoder"),
        "{err}"
    );
    let bi = tiny_cross_encoder(&tmp.path().join("bi"), "bi-encoder");
    let err = ClsEncoder::for_base(&bi.display().to_string())
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("cls-vec") && err.contains("bi-encoder"),
        "{err}"
    );
}
