//! Text primitives shared by every ansel crate: the word tokens lexical scorers
//! compare, the stop-word list they ignore, and a sentence splitter that keeps
//! byte offsets so answer spans can be mapped back onto sentences; and whether a query is
//! phrased as a question.

mod query_form;
mod sentences;
mod stopwords;
mod words;

pub use query_form::is_phrased_as_question;
pub use sentences::{split_sentences, SentenceSpan};
pub use stopwords::is_stop_word;
pub use words::{content_words, words};
