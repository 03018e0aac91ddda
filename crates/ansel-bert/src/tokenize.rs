use crate::PairLayout;
use ansel_model::{ModelError, Result};
use std::path::Path;
use tokenizers::Tokenizer;

/// A question and its candidate segments as model input: token ids and segment ids.
#[derive(Debug, Clone, PartialEq)]
pub struct Encoded {
    pub ids: Vec<i64>,
    pub types: Vec<i64>,
}

impl Encoded {
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

/// Tokenization (Hugging Face `tokenizer.json`, through the `tokenizers` crate) and the pair
/// layout of the encoder's family: BERT's `[CLS] question [SEP] segment [SEP] segment [SEP] ...`,
/// the question with segment id 0 and everything after its `[SEP]` with segment id 1; or
/// RoBERTa's `<s> question </s></s> segment </s> ...` (RoBERTa, XLM-RoBERTa, MPNet), every
/// token of type 0 (RoBERTa's tokenizers give no token types).
pub struct PairTokenizer {
    tokenizer: Tokenizer,
    layout: PairLayout,
    cls: i64,
    sep: i64,
    pub pad: i64,
}

impl PairTokenizer {
    /// Reads a BERT `tokenizer.json`; it must have `[CLS]`, `[SEP]` and `[PAD]` tokens.
    pub fn read(path: &Path) -> Result<PairTokenizer> {
        Self::read_for(path, PairLayout::Bert)
    }

    /// Reads `tokenizer.json` for a family's pair layout; it must have that layout's special
    /// tokens (`[CLS]`, `[SEP]`, `[PAD]`, or `<s>`, `</s>`, `<pad>`).
    pub fn read_for(path: &Path, layout: PairLayout) -> Result<PairTokenizer> {
        let mut tokenizer = Tokenizer::from_file(path).map_err(|e| ModelError::Format {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        // The file may ask for fixed padding and truncation; the model pads per batch and
        // truncates per segment itself.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(None)
            .map_err(|e| ModelError::Format {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?;
        let special = |token: &str| {
            tokenizer
                .token_to_id(token)
                .map(i64::from)
                .ok_or_else(|| ModelError::Format {
                    path: path.to_path_buf(),
                    message: format!("no {token} token in the vocabulary ({layout:?} pair layout)"),
                })
        };
        let [cls, sep, pad] = match layout {
            PairLayout::Bert => ["[CLS]", "[SEP]", "[PAD]"],
            PairLayout::Roberta => ["<s>", "</s>", "<pad>"],
        };
        let (cls, sep, pad) = (special(cls)?, special(sep)?, special(pad)?);
        Ok(PairTokenizer {
            tokenizer,
            layout,
            cls,
            sep,
            pad,
        })
    }

    /// Word-piece ids of `text`, without special tokens.
    pub fn word_pieces(&self, text: &str) -> Result<Vec<i64>> {
        let encoding = self
            .tokenizer
            .encode(text, false)
            .map_err(|e| ModelError::Backend(format!("tokenizer: {e}")))?;
        Ok(encoding.get_ids().iter().map(|&i| i64::from(i)).collect())
    }

    /// Word-piece ids of `text` with, for each piece, the index of the word it belongs to in
    /// the returned word list (words as the pre-tokenizer splits them: whitespace and
    /// punctuation; each word is its span of `text`, lower-cased).
    pub fn word_pieces_by_word(&self, text: &str) -> Result<(Vec<i64>, Vec<usize>, Vec<String>)> {
        let encoding = self
            .tokenizer
            .encode(text, false)
            .map_err(|e| ModelError::Backend(format!("tokenizer: {e}")))?;
        let ids: Vec<i64> = encoding.get_ids().iter().map(|&i| i64::from(i)).collect();
        let mut word_of = Vec::with_capacity(ids.len());
        let mut words: Vec<String> = Vec::new();
        let mut last: Option<u32> = None;
        let mut begin = 0;
        for (word, &(start, end)) in encoding.get_word_ids().iter().zip(encoding.get_offsets()) {
            // Pieces without a word id (none for plain text) start a word of their own.
            if word.is_none() || *word != last || words.is_empty() {
                begin = start;
                words.push(String::new());
            }
            // A word's pieces are contiguous in `text`: the word is its whole span so far.
            if let Some(w) = words.last_mut() {
                *w = text.get(begin..end).unwrap_or("").to_lowercase();
            }
            last = *word;
            word_of.push(words.len() - 1);
        }
        Ok((ids, word_of, words))
    }

    /// The tokens of `text`, or of the pair `text` + `pair` in the family's layout, with the
    /// special tokens when `special`, untruncated; each piece with its byte offsets in the
    /// text it came from (text-embeddings-inference's `/tokenize`).
    pub fn tokens(
        &self,
        text: &str,
        pair: Option<&str>,
        special: bool,
    ) -> Result<Vec<ansel_model::Token>> {
        let special_token = |id: i64| ansel_model::Token {
            id: id as u32,
            text: self.tokenizer.id_to_token(id as u32).unwrap_or_default(),
            special: true,
            start: None,
            stop: None,
        };
        let pieces = |text: &str| -> Result<Vec<ansel_model::Token>> {
            let encoding = self
                .tokenizer
                .encode(text, false)
                .map_err(|e| ModelError::Backend(format!("tokenizer: {e}")))?;
            Ok(encoding
                .get_ids()
                .iter()
                .zip(encoding.get_offsets())
                .map(|(&id, &(start, stop))| ansel_model::Token {
                    id,
                    text: text.get(start..stop).unwrap_or_default().to_string(),
                    special: false,
                    start: Some(start),
                    stop: Some(stop),
                })
                .collect())
        };
        let mut tokens = Vec::new();
        if special {
            tokens.push(special_token(self.cls));
        }
        tokens.extend(pieces(text)?);
        if let Some(pair) = pair {
            if special {
                tokens.push(special_token(self.sep));
                if self.layout == PairLayout::Roberta {
                    tokens.push(special_token(self.sep));
                }
            }
            tokens.extend(pieces(pair)?);
        }
        if special {
            tokens.push(special_token(self.sep));
        }
        Ok(tokens)
    }

    /// `[CLS]` and `[SEP]` ids (`<s>` and `</s>` in the RoBERTa layout).
    pub fn specials(&self) -> (i64, i64) {
        (self.cls, self.sep)
    }

    /// Ids with special tokens, as Hugging Face's `tokenizer(text)` gives them (used by checks).
    pub fn encode_single(&self, text: &str) -> Result<Vec<i64>> {
        let mut ids = vec![self.cls];
        ids.extend(self.word_pieces(text)?);
        ids.push(self.sep);
        Ok(ids)
    }

    /// `[CLS] question [SEP] s1 [SEP] s2 [SEP] ...` (or the RoBERTa layout) in at most
    /// `max_len` tokens.
    ///
    /// Truncation keeps the question: it is cut only when it alone would leave fewer than
    /// half of the tokens to the segments. The budget left is shared among the segments
    /// by giving the shortest ones what they need first ("longest first"); `segments[main]`
    /// (the candidate) is never cut below an equal share. Empty segments still get their `[SEP]`.
    pub fn encode(&self, question: &str, segments: &[&str], max_len: usize) -> Result<Encoded> {
        self.encode_typed(
            question,
            &segments.iter().map(|&s| (s, 1)).collect::<Vec<_>>(),
            max_len,
        )
    }

    /// [`PairTokenizer::encode`] with each segment's token type (the question's is 0): e.g.
    /// context sentences in a segment of their own, apart from the candidate's.
    pub fn encode_typed(
        &self,
        question: &str,
        segments: &[(&str, i64)],
        max_len: usize,
    ) -> Result<Encoded> {
        let mut q = self.word_pieces(question)?;
        let pieces: Vec<Vec<i64>> = segments
            .iter()
            .map(|(s, _)| self.word_pieces(s))
            .collect::<Result<_>>()?;
        let types: Vec<i64> = segments.iter().map(|&(_, t)| t).collect();
        Ok(self.assemble(&mut q, pieces, &types, max_len))
    }

    fn assemble(
        &self,
        q: &mut Vec<i64>,
        mut pieces: Vec<Vec<i64>>,
        segment_types: &[i64],
        max_len: usize,
    ) -> Encoded {
        // RoBERTa opens each segment with a second `</s>`.
        let per_segment = match self.layout {
            PairLayout::Bert => 1,
            PairLayout::Roberta => 2,
        };
        let specials = 2 + per_segment * pieces.len();
        let budget = max_len.saturating_sub(specials);
        let wanted: usize = pieces.iter().map(Vec::len).sum();
        let q_cap = budget.saturating_sub(wanted.min(budget / 2));
        q.truncate(q_cap);
        let mut left = budget - q.len();
        // Longest first: shortest segments take what they need while they fit an equal share.
        let mut order: Vec<usize> = (0..pieces.len()).collect();
        order.sort_by_key(|&i| pieces[i].len());
        let mut remaining = pieces.len();
        for i in order {
            let share = if remaining == 1 {
                left
            } else {
                left / remaining
            };
            let take = pieces[i].len().min(share);
            pieces[i].truncate(take);
            left -= take;
            remaining -= 1;
        }
        let mut ids = Vec::with_capacity(max_len);
        ids.push(self.cls);
        ids.extend_from_slice(q);
        ids.push(self.sep);
        let mut types = vec![0; ids.len()];
        for (p, &t) in pieces.iter().zip(segment_types) {
            if self.layout == PairLayout::Roberta {
                ids.push(self.sep);
            }
            ids.extend_from_slice(p);
            ids.push(self.sep);
            // RoBERTa's tokenizers give no token types: every token reads type 0.
            let t = if self.layout == PairLayout::Roberta {
                0
            } else {
                t
            };
            types.resize(ids.len(), t);
        }
        Encoded { ids, types }
    }
}

/// `run` over `items` in batches of `batch_size`, shortest first (by `len`) so that batches pad
/// little; one output per item, in the items' order.
pub fn by_length<I, T: Clone + Default>(
    items: &[I],
    len: impl Fn(&I) -> usize,
    batch_size: usize,
    mut run: impl FnMut(&[&I]) -> ansel_model::Result<Vec<T>>,
) -> ansel_model::Result<Vec<T>> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| len(&items[i]));
    let mut out = vec![T::default(); items.len()];
    for chunk in order.chunks(batch_size.max(1)) {
        let refs: Vec<&I> = chunk.iter().map(|&i| &items[i]).collect();
        for (&i, value) in chunk.iter().zip(run(&refs)?) {
            out[i] = value;
        }
    }
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::testing::tiny_tokenizer_json;

    pub fn tiny_tokenizer(dir: &Path) -> PairTokenizer {
        let path = dir.join("tokenizer.json");
        std::fs::write(&path, tiny_tokenizer_json()).unwrap();
        PairTokenizer::read(&path).unwrap()
    }

    #[test]
    fn pair_layout_and_segment_ids() {
        let dir = tempfile::tempdir().unwrap();
        let tok = tiny_tokenizer(dir.path());
        let e = tok
            .encode("Who wrote Hamlet?", &["Shakespeare wrote it."], 64)
            .unwrap();
        assert_eq!(e.ids, vec![2, 5, 6, 7, 8, 3, 9, 6, 10, 21, 3]);
        assert_eq!(e.types, vec![0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1]);
        // Unknown words map to [UNK], sub-words to ##-pieces.
        assert_eq!(tok.word_pieces("plays zebra").unwrap(), vec![16, 19, 1]);
    }

    #[test]
    fn tokens_carry_their_offsets_and_specials() {
        let dir = tempfile::tempdir().unwrap();
        let tok = tiny_tokenizer(dir.path());
        let tokens = tok.tokens("Who plays", Some("it."), true).unwrap();
        let ids: Vec<u32> = tokens.iter().map(|t| t.id).collect();
        assert_eq!(ids, vec![2, 5, 16, 19, 3, 10, 21, 3]);
        assert_eq!(tokens[0].text, "[CLS]");
        assert!(tokens[0].special && tokens[0].start.is_none());
        assert_eq!(
            (tokens[3].text.as_str(), tokens[3].start, tokens[3].stop),
            ("s", Some(8), Some(9))
        );
        assert_eq!((tokens[6].text.as_str(), tokens[6].start), (".", Some(2)));
        let plain = tok.tokens("Who plays", None, false).unwrap();
        assert_eq!(plain.len(), 3);
        assert!(plain.iter().all(|t| !t.special));
        // The RoBERTa layout doubles the separator between the two texts.
        let path = dir.path().join("tokenizer.json");
        let roberta = PairTokenizer::read_for(&path, PairLayout::Roberta).unwrap();
        let ids: Vec<u32> = roberta
            .tokens("who", Some("it"), true)
            .unwrap()
            .iter()
            .map(|t| t.id)
            .collect();
        assert_eq!(ids, vec![25, 5, 27, 27, 10, 27]);
        let e = roberta.encode("who", &["it"], 16).unwrap();
        assert_eq!(e.ids, [25, 5, 27, 27, 10, 27]);
        assert_eq!(e.types, [0; 6], "RoBERTa's layout has type 0 throughout");
    }

    #[test]
    fn pieces_map_back_to_their_words() {
        let dir = tempfile::tempdir().unwrap();
        let tok = tiny_tokenizer(dir.path());
        let (ids, word_of, words) = tok.word_pieces_by_word("The PLAYS, zebra.").unwrap();
        assert_eq!(ids, vec![17, 16, 19, 1, 1, 21]);
        assert_eq!(word_of, vec![0, 1, 1, 2, 3, 4]);
        assert_eq!(words, vec!["the", "plays", ",", "zebra", "."]);
        assert_eq!(ids, tok.word_pieces("The PLAYS, zebra.").unwrap());
    }

    #[test]
    fn truncation_keeps_the_question_and_each_segment_gets_its_sep() {
        let dir = tempfile::tempdir().unwrap();
        let tok = tiny_tokenizer(dir.path());
        let long = "it was written by william shakespeare in denmark ".repeat(10);
        let e = tok
            .encode("who wrote hamlet ?", &["a play", &long, "the tragedy"], 24)
            .unwrap();
        assert_eq!(e.len(), 24);
        assert_eq!(&e.ids[..6], &[2, 5, 6, 7, 8, 3], "question intact");
        assert_eq!(
            e.ids.iter().filter(|&&i| i == 3).count(),
            4,
            "[SEP] after q and each segment"
        );
        assert_eq!(&e.ids[6..9], &[15, 16, 3], "short segment intact");
        assert_eq!(&e.ids[21..], &[17, 20, 3], "short last segment intact");
        // Typed segments: each segment and its [SEP] carry its type; the cut is the same.
        let typed = tok
            .encode_typed(
                "who wrote hamlet ?",
                &[("a play", 2), (&long, 1), ("the tragedy", 2)],
                24,
            )
            .unwrap();
        assert_eq!(typed.ids, e.ids);
        let mut want = vec![0; 6];
        want.extend([2; 3]);
        want.extend([1; 12]);
        want.extend([2; 3]);
        assert_eq!(typed.types, want);
        // A very long question is cut so that the candidate keeps half of the tokens.
        let e = tok.encode(&"who ".repeat(100), &[&long], 32).unwrap();
        assert_eq!(e.len(), 32);
        assert_eq!(e.types.iter().filter(|&&t| t == 1).count(), 15);
    }
}
