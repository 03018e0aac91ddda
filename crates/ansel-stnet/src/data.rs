//! Token ids, IDF, frozen GloVe rows, and batches of (heading path, paragraph) items.

use crate::net::{Batch, CONTEXT, PAIR_FEATURES, WORD_FEATURES};
use ansel_torch::tch::Tensor;
use ansel_trec_car::{tokens, HeadingKind, OutlineQuery, Paragraph};
use std::collections::HashMap;

/// A query as token ids by heading kind, with the typed path.
pub struct QueryTokens {
    /// Section heading, intermediate headings, title (the encoders' order).
    pub parts: [Vec<i64>; 3],
    /// The whole path, title first, with each word's kind.
    pub path: Vec<(i64, HeadingKind)>,
}

/// The vocabulary of a collection and its queries, with normalised IDF.
pub struct Corpus {
    pub words: Vec<String>,
    pub ids: HashMap<String, i64>,
    /// IDF per id over the paragraphs, divided by the largest (so in [0, 1]).
    pub idf: Vec<f32>,
    /// Paragraph tokens (truncated to `max_para`), by paragraph index.
    pub paragraphs: Vec<Vec<i64>>,
    /// Term counts of each whole paragraph.
    pub term_counts: Vec<HashMap<i64, u32>>,
    pub full_lengths: Vec<usize>,
    pub para_index: HashMap<String, usize>,
    pub queries: Vec<QueryTokens>,
}

impl Corpus {
    pub fn new(
        paragraphs: &[Paragraph],
        queries: &[OutlineQuery],
        max_para: usize,
        max_part: usize,
    ) -> Corpus {
        let mut corpus = Corpus {
            words: vec!["<pad>".to_string()],
            ids: HashMap::new(),
            idf: Vec::new(),
            paragraphs: Vec::new(),
            term_counts: Vec::new(),
            full_lengths: Vec::new(),
            para_index: HashMap::new(),
            queries: Vec::new(),
        };
        let mut df: HashMap<i64, u32> = HashMap::new();
        for (i, p) in paragraphs.iter().enumerate() {
            let ids: Vec<i64> = tokens(&p.text()).iter().map(|w| corpus.id(w)).collect();
            let mut counts: HashMap<i64, u32> = HashMap::new();
            for &t in &ids {
                *counts.entry(t).or_default() += 1;
            }
            for &t in counts.keys() {
                *df.entry(t).or_default() += 1;
            }
            corpus.full_lengths.push(ids.len());
            corpus.term_counts.push(counts);
            corpus
                .paragraphs
                .push(ids.into_iter().take(max_para).collect());
            corpus.para_index.insert(p.id.clone(), i);
        }
        for q in queries {
            let mut parts: [Vec<i64>; 3] = Default::default();
            let mut path = Vec::new();
            for (kind, word) in q.typed_tokens() {
                let id = corpus.id(&word);
                path.push((id, kind));
                if parts[kind as usize].len() < max_part {
                    parts[kind as usize].push(id);
                }
            }
            corpus.queries.push(QueryTokens { parts, path });
        }
        let n = paragraphs.len().max(1) as f32;
        let raw: Vec<f32> = (0..corpus.words.len() as i64)
            .map(|id| {
                let d = df.get(&id).copied().unwrap_or(0) as f32;
                ((n - d + 0.5) / (d + 0.5) + 1.0).ln()
            })
            .collect();
        let max = raw.iter().copied().fold(f32::MIN_POSITIVE, f32::max);
        corpus.idf = raw.into_iter().map(|v| v / max).collect();
        corpus
    }

    fn id(&mut self, word: &str) -> i64 {
        if let Some(&id) = self.ids.get(word) {
            return id;
        }
        let id = self.words.len() as i64;
        self.words.push(word.to_string());
        self.ids.insert(word.to_string(), id);
        id
    }

    /// `[vocab, dim]` rows: GloVe where it knows the word, a fixed random vector (from `seed`)
    /// otherwise, zeros for padding. Returns the table and how many words GloVe knew.
    pub fn embeddings(&self, glove: &ansel_vectors::WordVectors, seed: u64) -> (Tensor, usize) {
        let dim = glove.dim();
        let mut rows = vec![0f32; self.words.len() * dim];
        let mut known = 0;
        let mut state = seed;
        for (i, w) in self.words.iter().enumerate().skip(1) {
            let row = &mut rows[i * dim..(i + 1) * dim];
            if let Some(v) = glove.get(w) {
                row.copy_from_slice(&v);
                known += 1;
            } else {
                for x in row.iter_mut() {
                    // Uniform in [-0.7, 0.7]: about GloVe's per-coordinate spread.
                    let u = ansel_trec_car::runs::splitmix64(&mut state) as f64 / u64::MAX as f64;
                    *x = ((u * 2.0 - 1.0) * 0.7) as f32;
                }
            }
        }
        (
            Tensor::from_slice(&rows).view([self.words.len() as i64, dim as i64]),
            known,
        )
    }

    /// A batch of (query index, paragraph index, pair features) items.
    pub fn batch(&self, items: &[(usize, usize, [f32; 3])]) -> Batch {
        let b = items.len() as i64;
        let pad_to = |seqs: &[&[i64]], left: bool| -> (Tensor, Tensor) {
            let l = seqs.iter().map(|s| s.len()).max().unwrap_or(0).max(1);
            let mut ids = vec![0i64; seqs.len() * l];
            let mut mask = vec![0f32; seqs.len() * l];
            for (i, s) in seqs.iter().enumerate() {
                let off = if left { l - s.len() } else { 0 };
                for (j, &t) in s.iter().enumerate() {
                    ids[i * l + off + j] = t;
                    mask[i * l + off + j] = 1.0;
                }
            }
            (
                Tensor::from_slice(&ids).view([b, l as i64]),
                Tensor::from_slice(&mask).view([b, l as i64]),
            )
        };
        let part = |k: usize| {
            let seqs: Vec<&[i64]> = items
                .iter()
                .map(|&(q, _, _)| &self.queries[q].parts[k][..])
                .collect();
            pad_to(&seqs, false)
        };
        let (p0, m0) = part(0);
        let (p1, m1) = part(1);
        let (p2, m2) = part(2);
        let path_ids: Vec<Vec<i64>> = items
            .iter()
            .map(|&(q, _, _)| self.queries[q].path.iter().map(|t| t.0).collect())
            .collect();
        let refs: Vec<&[i64]> = path_ids.iter().map(Vec::as_slice).collect();
        let (path, path_mask) = pad_to(&refs, true);
        let lq = path.size()[1] as usize;
        let mut context = vec![0f32; items.len() * lq * CONTEXT as usize];
        let mut words = vec![0f32; items.len() * lq * WORD_FEATURES as usize];
        let mut pair = Vec::with_capacity(items.len() * PAIR_FEATURES as usize);
        for (i, &(q, p, f)) in items.iter().enumerate() {
            let typed = &self.queries[q].path;
            let off = lq - typed.len();
            for (j, &(id, kind)) in typed.iter().enumerate() {
                let at = i * lq + off + j;
                let hot = kind.one_hot();
                let idf = self.idf[id as usize];
                let tf = self.term_counts[p].get(&id).copied().unwrap_or(0) as f32;
                let c = &mut context[at * CONTEXT as usize..(at + 1) * CONTEXT as usize];
                c[..3].copy_from_slice(&hot);
                c[3] = idf;
                let w = &mut words[at * WORD_FEATURES as usize..(at + 1) * WORD_FEATURES as usize];
                w[..3].copy_from_slice(&hot);
                w[3] = idf;
                w[4] = (1.0 + tf).ln();
                w[5] = f32::from(u8::from(tf > 0.0));
            }
            pair.extend_from_slice(&f);
        }
        let paras: Vec<&[i64]> = items
            .iter()
            .map(|&(_, p, _)| &self.paragraphs[p][..])
            .collect();
        let (para, para_mask) = pad_to(&paras, false);
        Batch {
            parts: [p0, p1, p2],
            part_masks: [m0, m1, m2],
            path,
            path_mask,
            context: Tensor::from_slice(&context).view([b, lq as i64, CONTEXT]),
            para,
            para_mask,
            word_features: Tensor::from_slice(&words).view([b, lq as i64, WORD_FEATURES]),
            pair_features: Tensor::from_slice(&pair).view([b, PAIR_FEATURES]),
        }
    }

    /// The pair features of the paragraph at BM25 rank `rank` (0-based) with score `score`,
    /// for a query whose best BM25 score is `best`.
    pub fn pair_features(&self, p: usize, rank: usize, score: f64, best: f64) -> [f32; 3] {
        [
            (score / best.max(1e-9)) as f32,
            1.0 / (rank as f32 + 1.0),
            (1.0 + self.full_lengths[p] as f32).ln() / 5.0,
        ]
    }
}
