//! Text primitives shared by every ansel crate: the word tokens lexical scorers
//! compare, the stop-word list they ignore, and a sentence splitter that keeps
//! byte offsets so answer spans can be mapped back onto sentences.

mod sentences;
mod stopwords;
mod words;

pub use sentences::{split_sentences, SentenceSpan};
pub use stopwords::is_stop_word;
pub use words::{content_words, words};
