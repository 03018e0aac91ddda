//! ansel as a library: what the command line, the Python package and other programs share.
//!
//! [`models`] turns a model spec (a built-in name, a model directory or name, an `a+b` fusion)
//! into a ranker; [`indexing`] adds document files to a sentence index; [`answering`] builds
//! the retrieve-prune-rerank cascade over an index; [`dense`] loads the sentence encoders of
//! dense retrieval; [`calibration`] turns a model's scores into
//! probabilities and decides when not to answer.

pub mod answering;
pub use ansel_answer::calibration;
#[cfg(feature = "torch")]
pub mod cassie;
pub mod cli;
pub mod dense;
pub mod indexing;
pub mod models;

/// The error and its causes, each said once. Our errors put their source in their own message
/// (to name the file next to it), so `{err:#}` would repeat the cause after it.
pub fn describe(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let cause = cause.to_string();
        if text.ends_with(&cause) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&cause);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::describe;
    use anyhow::Context;

    /// Like our error types: names the file and shows its source in its own message.
    #[derive(Debug)]
    struct NamesItsSource(std::io::Error);

    impl std::fmt::Display for NamesItsSource {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "data.tsv: {}", self.0)
        }
    }

    impl std::error::Error for NamesItsSource {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated_but_others_are_kept() {
        let io = || std::io::Error::new(std::io::ErrorKind::NotFound, "not found");
        let err = Err::<(), _>(NamesItsSource(io()))
            .context("cannot read data")
            .unwrap_err();
        assert_eq!(describe(&err), "cannot read data: data.tsv: not found");
        let err = Err::<(), _>(io()).context("cannot read data").unwrap_err();
        assert_eq!(describe(&err), "cannot read data: not found");
    }
}
