use serde::{Deserialize, Serialize};

/// A question and the candidate sentences that may answer it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    pub id: String,
    pub text: String,
    pub candidates: Vec<Candidate>,
}

/// One candidate answer sentence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub id: String,
    pub text: String,
    /// Gold relevance when the source has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<bool>,
    /// Where the sentence sits in its source document, when the source keeps document order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<DocContext>,
}

/// A candidate's place in its document: what `rr`, context-aware models and
/// answer display need.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DocContext {
    pub doc_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// 0-based index of the sentence in the document.
    pub position: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

impl Question {
    /// A question over unlabelled candidate texts, numbered from 0. `in_document_order`: the
    /// texts are one document's sentences in order, so each gets its position and neighbours
    /// (as `"in_document_order": true` does in ansel JSON lines).
    pub fn over_texts(
        id: impl Into<String>,
        text: impl Into<String>,
        texts: impl IntoIterator<Item = String>,
        in_document_order: bool,
    ) -> Question {
        let texts: Vec<String> = texts.into_iter().collect();
        // In order, a text's neighbours are the texts beside it (no lookup by position needed).
        let context = |i: usize| DocContext {
            doc_id: "doc".into(),
            title: None,
            position: i,
            prev: i.checked_sub(1).map(|p| texts[p].clone()),
            next: texts.get(i + 1).cloned(),
        };
        let contexts: Vec<Option<DocContext>> = (0..texts.len())
            .map(|i| in_document_order.then(|| context(i)))
            .collect();
        let candidates = texts
            .into_iter()
            .zip(contexts)
            .enumerate()
            .map(|(i, (text, context))| Candidate {
                id: i.to_string(),
                text,
                label: None,
                context,
            })
            .collect();
        Question {
            id: id.into(),
            text: text.into(),
            candidates,
        }
    }

    /// Number of candidates labelled positive.
    pub fn positives(&self) -> usize {
        self.candidates
            .iter()
            .filter(|c| c.label == Some(true))
            .count()
    }

    /// Whether every candidate has a document position (what `rr` needs).
    pub fn has_document_order(&self) -> bool {
        !self.candidates.is_empty() && self.candidates.iter().all(|c| c.context.is_some())
    }

    /// Labels as booleans, unlabelled candidates counted as negative.
    pub fn labels(&self) -> Vec<bool> {
        self.candidates
            .iter()
            .map(|c| c.label == Some(true))
            .collect()
    }
}

/// Fills `prev`/`next` of candidates from their siblings in the same document
/// (same `doc_id`, adjacent `position`), where the source did not give them.
pub fn link_neighbours(candidates: &mut [Candidate]) {
    use std::collections::HashMap;
    let by_place: HashMap<(String, usize), String> = candidates
        .iter()
        .filter_map(|c| {
            let ctx = c.context.as_ref()?;
            Some(((ctx.doc_id.clone(), ctx.position), c.text.clone()))
        })
        .collect();
    for candidate in candidates.iter_mut() {
        let Some(ctx) = candidate.context.as_mut() else {
            continue;
        };
        if ctx.prev.is_none() && ctx.position > 0 {
            ctx.prev = by_place
                .get(&(ctx.doc_id.clone(), ctx.position - 1))
                .cloned();
        }
        if ctx.next.is_none() {
            ctx.next = by_place
                .get(&(ctx.doc_id.clone(), ctx.position + 1))
                .cloned();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_in_document_order_get_positions_and_neighbours() {
        let texts = || ["A.", "B.", "C."].map(String::from);
        let q = Question::over_texts("q", "why?", texts(), true);
        assert!(q.has_document_order());
        let middle = q.candidates[1].context.as_ref().unwrap();
        assert_eq!(middle.position, 1);
        assert_eq!(middle.prev.as_deref(), Some("A."));
        assert_eq!(middle.next.as_deref(), Some("C."));
        let loose = Question::over_texts("q", "why?", texts(), false);
        assert!(loose.candidates.iter().all(|c| c.context.is_none()));
        assert_eq!(loose.candidates[2].id, "2");
    }

    fn cand(text: &str, doc: &str, position: usize) -> Candidate {
        Candidate {
            id: text.into(),
            text: text.into(),
            label: None,
            context: Some(DocContext {
                doc_id: doc.into(),
                position,
                ..Default::default()
            }),
        }
    }

    #[test]
    fn neighbours_come_from_the_same_document_only() {
        let mut cands = vec![
            cand("a0", "A", 0),
            cand("b1", "B", 1),
            cand("a1", "A", 1),
            cand("a3", "A", 3),
        ];
        link_neighbours(&mut cands);
        let ctx = |i: usize| cands[i].context.clone().unwrap();
        assert_eq!(ctx(0).prev, None);
        assert_eq!(ctx(0).next.as_deref(), Some("a1"));
        assert_eq!(ctx(2).prev.as_deref(), Some("a0"));
        assert_eq!(
            ctx(2).next,
            None,
            "position 2 of A is missing, so a1 has no next"
        );
        assert_eq!(ctx(1).prev, None);
        assert_eq!(ctx(3).prev, None);
    }
}
