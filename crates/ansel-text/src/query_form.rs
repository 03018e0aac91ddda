/// Words that open an English question: the question words and the auxiliaries of a yes/no
/// question ("is", "does", "can"), and "name" ("Name a ...", as TREC QA asks).
const QUESTION_OPENERS: &[&str] = &[
    "what", "who", "whom", "whose", "which", "when", "where", "why", "how", "is", "are", "was",
    "were", "am", "do", "does", "did", "can", "could", "should", "would", "will", "shall", "may",
    "might", "must", "has", "have", "had", "name", "can't", "won't",
];

/// Whether `word` (lower case, apostrophes as `'`) is an opener, contracted or negated as
/// questions write them: "what's", "who'd", "doesn't".
fn opens_question(word: &str) -> bool {
    let before_apostrophe = word.split('\'').next().unwrap_or(word);
    let negated = word.strip_suffix("n't").unwrap_or(word);
    [word, before_apostrophe, negated]
        .iter()
        .any(|form| QUESTION_OPENERS.contains(form))
}

/// Whether `query` is phrased as a question (it holds a `?`, or its first word opens one)
/// rather than typed as keywords, a heading or a claim. Rankers tuned on questions weigh the
/// answer-sentence skill more for the first and general relevance more for the rest
/// (docs/results/general-reranker.md).
pub fn is_phrased_as_question(query: &str) -> bool {
    query.contains('?')
        || crate::words(query)
            .first()
            .is_some_and(|first| opens_question(first))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_are_told_from_keywords_headings_and_claims() {
        for question in [
            "How tall is the Eiffel Tower?",
            "how big is bmc software in houston, tx",
            "Name a Crip gang color",
            "what's the capital of France",
            "Doesn’t aspirin thin the blood",
            "define visceral?",
            "The tower is tall. Really?",
        ] {
            assert!(is_phrased_as_question(question), "{question}");
        }
        for query in [
            "Eiffel Tower height",
            "ASME Society awards ASME fellow",
            "Whatever happened to Baby Jane",
            "Don Quixote author",
            "Aspirin reduces the risk of stroke.",
            "",
            "  ",
        ] {
            assert!(!is_phrased_as_question(query), "{query}");
        }
    }
}
