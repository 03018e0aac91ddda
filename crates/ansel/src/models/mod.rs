//! Turns a `--model` argument (a built-in name, a model directory or name, or a `+` fusion) into a ranker.
//!
//! A model directory holds a `model.json` card; its `kind` picks the loader in
//! [`LOADERS`]. A new trainable model family registers one line there.

use ansel_data::Question;
use ansel_model::{ModelCard, Ranker};
use anyhow::{anyhow, bail, Context, Result};
use std::path::{Path, PathBuf};

#[cfg(feature = "torch")]
pub mod eqag;

type Loader = fn(&Path, &ModelCard) -> Result<Box<dyn Ranker>>;

/// Model kinds that load from a directory, by the `kind` of their card.
/// A build without the `torch` feature loads the efficient networks (their plain-Rust forward
/// pass) and ONNX cross-encoders only.
const LOADERS: &[(&str, Loader)] = &[
    ("cosinenet", load_efficient),
    ("relcnn", load_efficient),
    ("compare-aggregate", load_efficient),
    #[cfg(feature = "torch")]
    (ansel_bert::KIND, load_cross_encoder),
    #[cfg(feature = "torch")]
    (ansel_cassie::KIND, load_cassie),
    #[cfg(feature = "torch")]
    (ansel_bert::BI_KIND, load_bi_encoder),
    #[cfg(feature = "torch")]
    (ansel_graph::KIND, eqag::load),
    #[cfg(feature = "torch")]
    (ansel_cqa::KIND, load_cqa),
    (ansel_onnx::KIND, load_onnx),
    (ansel_onnx::SENTENCE_KIND, load_sentence_onnx),
    (ansel_model::PAIR_FUSION_KIND, load_pair_fusion),
];

/// The model that ranks candidates users bring (`rank`, `eval`, the reranking routes of `serve`,
/// the Python `Ranker`): the general reranker, the MPNet TANDA cross-encoder's logit plus 6 x the
/// cosine of all-mpnet-base-v2 (20 x for a query not phrased as a question), long texts read in
/// windows (models/mpnet-base-general). Users
/// send web queries, keywords and passages as well as questions, and on those the cross-encoder
/// alone ranks below BM25 (docs/results/general-reranker.md); the fusion scores each pair on its
/// own and needs ONNX Runtime only, so the build without libtorch has the same default.
pub const DEFAULT_MODEL: &str = "mpnet-base-general";

/// The model that orders the answers `ask` and `serve` send it: the MPNet cross-encoder alone, on
/// the few sentences the pruning model sends on. Answering questions from sentences is its
/// specialty, and the general fusion's second encoder would put `ask` past its 150 ms bound
/// (docs/results/general-reranker.md, "Inside ask").
pub const DEFAULT_ASK_MODEL: &str = "mpnet-base-squad-tanda-int8";

/// The fast model that orders the retrieved sentences and sends its best on to the ask model: the
/// general MiniLM-L6 student (int8 ONNX, about 4 ms a sentence on 2 cores), distilled from the
/// student fusion on passages, keyword queries, forum threads and AS2 lists, so that users'
/// keyword queries are not pruned by an AS2-only model (docs/results/general-reranker.md).
pub const DEFAULT_PRUNE_MODEL: &str = "minilm-l6-general-distilled-int8";

fn load_efficient(dir: &Path, card: &ModelCard) -> Result<Box<dyn Ranker>> {
    Ok(Box::new(ansel_efficient::EfficientRanker::load(dir, card)?))
}

#[cfg(feature = "torch")]
fn load_cross_encoder(dir: &Path, card: &ModelCard) -> Result<Box<dyn Ranker>> {
    Ok(Box::new(ansel_bert::CrossEncoderRanker::load(dir, card)?))
}

fn load_onnx(dir: &Path, card: &ModelCard) -> Result<Box<dyn Ranker>> {
    Ok(Box::new(ansel_onnx::OnnxRanker::load(dir, card)?))
}

fn load_sentence_onnx(dir: &Path, card: &ModelCard) -> Result<Box<dyn Ranker>> {
    Ok(Box::new(ansel_onnx::SentenceRanker::load(dir, card)?))
}

/// A per-pair weighted sum of models ([`ansel_model::PairFusion`]); each member is a directory
/// relative to the card's (`../../vendor/models/...`) or a model's name, and not a fusion itself.
fn load_pair_fusion(dir: &Path, card: &ModelCard) -> Result<Box<dyn Ranker>> {
    let at = |field: String| {
        format!(
            "{}: field `{field}`",
            dir.join(ansel_model::CARD_FILE).display()
        )
    };
    let settings: ansel_model::PairFusionSettings =
        ansel_model::json::from_value(card.config.clone(), "config").map_err(|message| {
            anyhow!("{}: {message}", dir.join(ansel_model::CARD_FILE).display())
        })?;
    if settings.members.is_empty() {
        bail!("{}: no members", at("config.members".into()));
    }
    let mut members = Vec::new();
    for (i, member) in settings.members.iter().enumerate() {
        let relative = dir.join(&member.model);
        let spec = if relative.is_dir() {
            relative.display().to_string()
        } else {
            member.model.clone()
        };
        if let Ok(inner) = model_dir(&spec).and_then(|d| Ok(ModelCard::read(&d)?)) {
            if inner.kind == card.kind {
                bail!(
                    "{}: a {} cannot hold another",
                    at(format!("config.members[{i}].model")),
                    card.kind
                );
            }
        }
        let weights = [
            ("weight", Some(member.weight)),
            ("keyword_weight", member.keyword_weight),
        ];
        for (field, weight) in weights {
            if let Some(weight) = weight.filter(|w| !w.is_finite()) {
                bail!(
                    "{}: {weight} is not a finite number",
                    at(format!("config.members[{i}].{field}"))
                );
            }
        }
        let ranker =
            resolve_one(&spec, &[]).with_context(|| at(format!("config.members[{i}].model")))?;
        let weight = ansel_model::FusionWeight {
            question: member.weight,
            keywords: member.keyword_weight.unwrap_or(member.weight),
        };
        members.push((ranker, weight));
    }
    let fusion = Box::new(ansel_model::PairFusion::new(card.name.clone(), members));
    Ok(match settings.windows {
        Some(windows) if windows.words == 0 => {
            bail!("{}: 0 words", at("config.windows.words".into()))
        }
        Some(windows) => Box::new(ansel_model::Chunked::new(fusion, windows)),
        None => fusion,
    })
}

#[cfg(feature = "torch")]
fn load_cassie(dir: &Path, card: &ModelCard) -> Result<Box<dyn Ranker>> {
    Ok(Box::new(ansel_cassie::CassieRanker::load(dir, card)?))
}

#[cfg(feature = "torch")]
fn load_cqa(dir: &Path, card: &ModelCard) -> Result<Box<dyn Ranker>> {
    Ok(Box::new(ansel_cqa::CqaRanker::load(dir, card)?))
}

#[cfg(feature = "torch")]
fn load_bi_encoder(dir: &Path, card: &ModelCard) -> Result<Box<dyn Ranker>> {
    Ok(Box::new(ansel_bert::BiEncoderRanker::load(dir, card)?))
}

/// A cross-encoder directory made by other tools (no ansel card): an ONNX export
/// (`model.onnx` or `onnx/model.onnx`) or a Hugging Face directory with `model.safetensors`,
/// each with `config.json` and `tokenizer.json`. `None` when `dir` is neither.
fn load_uncarded(dir: &Path) -> Result<Option<Box<dyn Ranker>>> {
    let has = |file: &str| dir.join(file).is_file();
    if !(has("config.json") && has("tokenizer.json")) {
        return Ok(None);
    }
    if ansel_onnx::export_graph(dir).is_some() {
        return Ok(Some(Box::new(ansel_onnx::OnnxRanker::load_export(dir)?)));
    }
    if !has("model.safetensors") {
        return Ok(None);
    }
    load_hf_cross_encoder(dir).map(Some)
}

#[cfg(feature = "torch")]
fn load_hf_cross_encoder(dir: &Path) -> Result<Box<dyn Ranker>> {
    Ok(Box::new(ansel_bert::CrossEncoderRanker::load_hf_dir(dir)?))
}

#[cfg(not(feature = "torch"))]
fn load_hf_cross_encoder(dir: &Path) -> Result<Box<dyn Ranker>> {
    bail!(
        "{}: a PyTorch cross-encoder needs libtorch, and this build has none; export it to ONNX \
         (model.onnx beside its tokenizer.json and config.json) or use the full build",
        dir.display()
    )
}

/// Environment variable naming a folder of trained models that `--model NAME` finds by name.
pub const MODELS_ENV: &str = "ANSEL_MODELS";

/// Folders searched for a model given by name (`--model cosinenet-wikiqa`), in order:
/// `$ANSEL_MODELS`, then the repository's `models/` beside the binary (`target/release/ansel`
/// or a copy installed next to a `models` folder), then the checkout the binary was built from.
pub fn model_folders() -> Vec<PathBuf> {
    let mut folders = Vec::new();
    if let Some(dir) = std::env::var_os(MODELS_ENV) {
        folders.push(PathBuf::from(dir));
    }
    if let Some(exe_dir) = std::env::current_exe().ok().and_then(|exe| {
        let exe = exe.canonicalize().unwrap_or(exe);
        exe.parent().map(Path::to_path_buf)
    }) {
        folders.push(exe_dir.join("models"));
        folders.push(exe_dir.join("../../models"));
    }
    folders.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models"));
    folders
}

/// The model directory a bare name refers to, if one of [`model_folders`] holds it.
fn named_model_dir(name: &str) -> Option<PathBuf> {
    if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
        return None;
    }
    model_folders()
        .into_iter()
        .map(|folder| folder.join(name))
        .find(|dir| dir.join(ansel_model::CARD_FILE).is_file())
}

/// A model directory given as a path or by name (one of [`model_folders`]).
pub fn model_dir(spec: &str) -> Result<PathBuf> {
    let path = Path::new(spec);
    if path.join(ansel_model::CARD_FILE).is_file() {
        return Ok(path.to_path_buf());
    }
    named_model_dir(spec).ok_or_else(|| {
        anyhow!(
            "{spec:?} is not a model directory (no {}) and no model of that name is in {}",
            ansel_model::CARD_FILE,
            model_folders()
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

/// The span reader that `ask`, `serve` and `ansel.Index` find answer spans with, unless told
/// otherwise (docs/results/span-reader.md).
pub const DEFAULT_READER: &str = "minilm-l6-squad-span-int8";

/// Loads a span reader given as a path or by name: a converted one
/// ([`ansel_onnx::SPAN_KIND`], any build), a libtorch span extractor (builds with libtorch), or
/// `rule`, the rule baseline. Returns it with its directory (empty for `rule`).
pub fn span_reader(spec: &str) -> Result<(Box<dyn ansel_reader::SpanReader>, PathBuf)> {
    if spec == ansel_reader::RULE_READER {
        return Ok((Box::<ansel_reader::RuleReader>::default(), PathBuf::new()));
    }
    let dir = model_dir(spec)?;
    let card = ansel_model::ModelCard::read(&dir)?;
    let reader: Box<dyn ansel_reader::SpanReader> = match card.kind.as_str() {
        ansel_onnx::SPAN_KIND => Box::new(ansel_onnx::OnnxSpanReader::load(&dir, &card)?),
        #[cfg(feature = "torch")]
        ansel_reader::KIND => Box::new(ansel_reader::SpanExtractor::load(&dir, &card)?),
        other => bail!(
            "{}: a {other:?} model is not a span reader ({:?}{})",
            dir.display(),
            ansel_onnx::SPAN_KIND,
            if cfg!(feature = "torch") {
                format!(" or {:?}", ansel_reader::KIND)
            } else {
                String::new()
            }
        ),
    };
    Ok((reader, dir))
}

/// Resolves a model spec: a built-in lexical model, a model directory, the
/// name of a trained model in one of [`model_folders`], or several of these
/// joined by `+` (their standardised scores summed: [`ansel_model::Fusion`]).
/// `corpus` supplies term statistics to lexical models.
pub fn resolve(spec: &str, corpus: &[Question]) -> Result<Box<dyn Ranker>> {
    if spec.contains('+') && !Path::new(spec).exists() {
        if spec.split('+').any(|member| member.trim().is_empty()) {
            bail!("model {spec:?}: a fusion joins model names with single `+` signs (e.g. {DEFAULT_MODEL}); one of its names is empty");
        }
        let members = spec
            .split('+')
            .map(|member| resolve_one(member.trim(), corpus))
            .collect::<Result<Vec<_>>>()?;
        return Ok(Box::new(ansel_model::Fusion::new(members)));
    }
    resolve_one(spec, corpus)
}

/// The first lexical model of `spec` (its members joined by `+`) that weighs words by corpus
/// statistics (`idf-wo`, `bm25`), by name; `None` when the spec needs no corpus.
pub fn corpus_member(spec: &str) -> Option<&str> {
    spec.split('+')
        .map(|member| member.trim().split(':').next().unwrap_or(""))
        .find(|name| ansel_lexical::CORPUS_NAMES.contains(name))
}

/// Resolves one model of a spec (no `+`).
fn resolve_one(spec: &str, corpus: &[Question]) -> Result<Box<dyn Ranker>> {
    if let Some(ranker) = ansel_lexical::from_spec(spec, corpus).map_err(|e| anyhow!(e))? {
        return Ok(ranker);
    }
    let path = Path::new(spec);
    let named = (!path.is_dir()).then(|| named_model_dir(spec)).flatten();
    let dir = named.as_deref().unwrap_or(path);
    if dir.is_dir() {
        if !dir.join(ansel_model::CARD_FILE).is_file() {
            if let Some(ranker) =
                load_uncarded(dir).with_context(|| format!("cannot load model {spec}"))?
            {
                return Ok(ranker);
            }
        }
        let card =
            ModelCard::read(dir).with_context(|| format!("{spec} is not a model directory"))?;
        let (_, load) = LOADERS
            .iter()
            .find(|(kind, _)| *kind == card.kind)
            .ok_or_else(|| {
                let known: Vec<&str> = LOADERS.iter().map(|(k, _)| *k).collect();
                let note = if cfg!(feature = "torch") {
                    ""
                } else {
                    "; built without libtorch, it loads lexical, efficient and ONNX models only: \
                     convert a cross-encoder with `ansel quantize`"
                };
                anyhow!(
                    "{spec}: unknown model kind {:?} (this build loads: {}{note})",
                    card.kind,
                    known.join(", ")
                )
            })?;
        return load(dir, &card).with_context(|| format!("cannot load model {spec}"));
    }
    if path.is_file() {
        bail!(
            "model {spec:?} is a file; a model is a built-in name ({}) or a directory holding {}",
            ansel_lexical::NAMES.join(", "),
            ansel_model::CARD_FILE
        );
    }
    let searched: Vec<String> = model_folders()
        .iter()
        .map(|f| f.display().to_string())
        .collect();
    bail!(
        "unknown model {spec:?}: not a built-in model ({}), not a model directory, and no model of \
         that name in {} (set {MODELS_ENV} to the folder that holds it)",
        ansel_lexical::NAMES.join(", "),
        searched.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_models_resolve() {
        for spec in [DEFAULT_MODEL, DEFAULT_ASK_MODEL, DEFAULT_PRUNE_MODEL] {
            let ranker = resolve(spec, &[]).unwrap_or_else(|e| panic!("{spec}: {e:#}"));
            let question = Question::over_texts("q", "tall tower", ["A tall tower.".into()], true);
            assert_eq!(ranker.score(&question).unwrap().len(), 1);
        }
    }

    /// Directories other tools wrote, without an ansel card: a Hugging Face cross-encoder and
    /// its ONNX export in sentence-transformers' layout (`onnx/model.onnx`) load by detection,
    /// and libtorch and ONNX Runtime score the same pairs alike.
    #[cfg(feature = "torch")]
    #[test]
    fn hugging_face_and_onnx_export_directories_load_without_a_card() {
        let _serial = ansel_bert::testing::serial();
        let tmp = tempfile::tempdir().unwrap();
        let hf = ansel_bert::testing::tiny_base(tmp.path(), 0.0);
        let export = tmp.path().join("exported");
        std::fs::create_dir_all(export.join("onnx")).unwrap();
        let (model, _, _) = ansel_bert::read_model_dir(&hf).unwrap();
        let bytes = ansel_onnx::onnx_bytes(&model, ansel_onnx::Precision::Fp32).unwrap();
        std::fs::write(export.join("onnx/model.onnx"), bytes).unwrap();
        for file in ["config.json", "tokenizer.json"] {
            std::fs::copy(hf.join(file), export.join(file)).unwrap();
        }
        let texts = ["the play is set in denmark .", "hamlet is a tragedy ."].map(String::from);
        let question = Question::over_texts("q", "where is hamlet set ?", texts, false);
        let torch = resolve(hf.to_str().unwrap(), &[])
            .unwrap()
            .score(&question)
            .unwrap();
        let onnx = resolve(export.to_str().unwrap(), &[])
            .unwrap()
            .score(&question)
            .unwrap();
        assert_eq!(torch.len(), 2);
        for (a, b) in torch.iter().zip(&onnx) {
            assert!((a - b).abs() < 1e-4, "{torch:?} vs {onnx:?}");
        }
        // Without a tokenizer it is no model directory, and the error says what is missing.
        std::fs::remove_file(export.join("tokenizer.json")).unwrap();
        let err = resolve(export.to_str().unwrap(), &[]).err().unwrap();
        assert!(crate::describe(&err).contains("model.json"), "{err:#}");
    }

    #[test]
    fn corpus_members_are_found_by_name_in_fusions() {
        assert_eq!(corpus_member("wo-rr+bm25:k1=1.2"), Some("bm25"));
        assert_eq!(corpus_member(" idf-wo + wo"), Some("idf-wo"));
        assert_eq!(corpus_member("wo-rr+cosinenet-wikiqa"), None);
    }

    /// Built without libtorch, every committed efficient model loads (its native forward pass) and
    /// the default models (ONNX cross-encoders) put the answer first.
    #[cfg(not(feature = "torch"))]
    #[test]
    fn without_libtorch_the_efficient_models_and_the_default_models_score() {
        let texts = [
            "Grass is green.",
            "The tower is 330 metres tall.",
            "Paris is in France.",
        ];
        let question = Question::over_texts(
            "q",
            "How tall is the Eiffel Tower?",
            texts.map(String::from),
            true,
        );
        for name in [
            "cosinenet-wikiqa",
            "cosinenet-wikiqa-distilled",
            "compare-aggregate-wikiqa",
            DEFAULT_MODEL,
            DEFAULT_PRUNE_MODEL,
        ] {
            let scores = resolve(name, &[]).unwrap().score(&question).unwrap();
            assert_eq!(scores.len(), 3, "{name}");
            assert!(scores.iter().all(|s| s.is_finite()), "{name}: {scores:?}");
            if name == DEFAULT_MODEL || name == DEFAULT_PRUNE_MODEL {
                let best = (0..3).max_by(|&a, &b| scores[a].total_cmp(&scores[b]));
                assert_eq!(best, Some(1), "{scores:?}");
            }
        }
    }

    /// Built without libtorch, a libtorch model's directory is refused with what to do instead.
    #[cfg(not(feature = "torch"))]
    #[test]
    fn without_libtorch_a_libtorch_model_says_how_to_convert_it() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/minilm-l6-wikiqa");
        let err = resolve(dir.to_str().unwrap(), &[]).err().unwrap();
        let message = crate::describe(&err);
        assert!(message.contains("built without libtorch"), "{message}");
        assert!(message.contains("ansel quantize"), "{message}");
    }
}
