//! SQuAD as outline-shaped pre-training data for STNet.
//!
//! The paper trains on TREC CAR train-v2.0, hundreds of thousands of articles; the test200 folds
//! give each network about 1,600 heading queries. SQuAD v1.1 is Wikipedia too (none of its 442
//! articles is a test200 article), so each of its questions becomes one more query: the article
//! title as the path's title, the question as its section heading, the question's own paragraph
//! relevant and the other BM25 candidates over the file's paragraphs not.

use ansel_data::readers::squad::SquadParagraph;
use ansel_trec_car::{OutlineQuery, ParaBody, Paragraph};
use std::collections::HashMap;

/// Pre-training queries over their paragraph collection.
pub struct Outlines {
    pub paragraphs: Vec<Paragraph>,
    pub queries: Vec<OutlineQuery>,
    /// Query id -> the id of the paragraph it was asked about.
    pub relevant: HashMap<String, String>,
}

/// Every paragraph of `squad`, and a seeded sample of at most `limit` of its questions (all of
/// them when there are not more), in file order.
pub fn squad_outlines(squad: &[SquadParagraph], limit: usize, seed: u64) -> Outlines {
    let paragraphs = squad
        .iter()
        .map(|p| Paragraph {
            id: p.doc_id.clone(),
            bodies: vec![ParaBody::Text(p.context.clone())],
        })
        .collect();
    let mut asked: Vec<(usize, usize)> = squad
        .iter()
        .enumerate()
        .flat_map(|(p, para)| (0..para.questions.len()).map(move |q| (p, q)))
        .collect();
    crate::sample_in_place(&mut asked, limit, seed);
    let mut queries = Vec::with_capacity(asked.len());
    let mut relevant = HashMap::with_capacity(asked.len());
    for (p, q) in asked {
        let para = &squad[p];
        let question = &para.questions[q].question;
        let id = format!("squad/{}", question.id);
        relevant.insert(id.clone(), para.doc_id.clone());
        queries.push(OutlineQuery {
            id,
            page_id: format!("squad/{}", para.article),
            title: para.title.replace('_', " "),
            headings: vec![question.text.clone()],
        });
    }
    Outlines {
        paragraphs,
        queries,
        relevant,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ansel_trec_car::HeadingKind;

    fn squad() -> Vec<SquadParagraph> {
        let json = r#"{"version": "1.1", "data": [
          {"title": "Sea_turtle", "paragraphs": [
            {"context": "Sea turtles have hard shells. They swim far.",
             "qas": [{"id": "q1", "question": "What do sea turtles have?",
                      "answers": [{"text": "hard shells", "answer_start": 18}]},
                     {"id": "q2", "question": "What do they do?",
                      "answers": [{"text": "swim far", "answer_start": 35}]}]},
            {"context": "Turtles lay eggs on beaches.",
             "qas": [{"id": "q3", "question": "Where do turtles lay eggs?",
                      "answers": [{"text": "beaches", "answer_start": 20}]}]}]},
          {"title": "Korea", "paragraphs": [
            {"context": "Turtle ships were built in Korea.",
             "qas": [{"id": "q4", "question": "Where were turtle ships built?",
                      "answers": [{"text": "Korea", "answer_start": 27}]}]}]}]}"#;
        ansel_data::readers::squad::parse_paragraphs("t.json".as_ref(), json.as_bytes()).unwrap()
    }

    #[test]
    fn each_question_is_a_title_and_heading_query_with_its_own_paragraph_relevant() {
        let out = squad_outlines(&squad(), 100, 7);
        assert_eq!(out.paragraphs.len(), 3);
        assert_eq!(out.paragraphs[1].text(), "Turtles lay eggs on beaches.");
        let ids: Vec<&str> = out.queries.iter().map(|q| q.id.as_str()).collect();
        assert_eq!(ids, ["squad/q1", "squad/q2", "squad/q3", "squad/q4"]);
        let q3 = &out.queries[2];
        assert_eq!(q3.title, "Sea turtle");
        assert_eq!(q3.text(), "Sea turtle Where do turtles lay eggs?");
        let kinds: Vec<HeadingKind> = q3.typed_tokens().iter().map(|t| t.0).collect();
        assert_eq!(kinds[..2], [HeadingKind::Title; 2]);
        assert!(kinds[2..].iter().all(|&k| k == HeadingKind::Section));
        assert_eq!(out.relevant["squad/q3"], out.paragraphs[1].id);
        assert_eq!(out.relevant["squad/q4"], out.paragraphs[2].id);
        // Articles stay apart: the page id is the article's.
        assert_eq!(out.queries[0].page_id, out.queries[2].page_id);
        assert_ne!(out.queries[0].page_id, out.queries[3].page_id);
    }

    #[test]
    fn the_question_sample_is_seeded_and_capped() {
        let pick = |limit, seed| {
            squad_outlines(&squad(), limit, seed)
                .queries
                .into_iter()
                .map(|q| q.id)
                .collect::<Vec<_>>()
        };
        assert_eq!(pick(2, 1).len(), 2);
        assert_eq!(pick(2, 1), pick(2, 1));
        assert!((0..20).any(|seed| pick(2, seed) != pick(2, 1)));
        let out = squad_outlines(&squad(), 2, 1);
        assert_eq!(out.paragraphs.len(), 3, "every paragraph stays a candidate");
        assert_eq!(out.relevant.len(), 2);
    }
}
