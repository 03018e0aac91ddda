/// Lower-cased word tokens: maximal runs of alphanumeric characters.
///
/// Apostrophes inside a word are kept ("don't"), so that contractions do not
/// turn into stray single letters; everything else separates words. This is
/// the one tokenization every lexical feature of ansel uses, so question and
/// candidate are always compared on equal terms.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        if ch.is_alphanumeric() {
            current.extend(ch.to_lowercase());
        } else if (ch == '\'' || ch == '\u{2019}')
            && !current.is_empty()
            && chars.peek().is_some_and(|next| next.is_alphanumeric())
        {
            current.push('\'');
        } else if !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Word tokens with stop words removed.
pub fn content_words(text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(|w| !crate::is_stop_word(w))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_on_punctuation_and_lowercases() {
        assert_eq!(
            words("What's the GDP of U.S.A.? (3.5%)"),
            vec!["what's", "the", "gdp", "of", "u", "s", "a", "3", "5"]
        );
    }

    #[test]
    fn trailing_apostrophe_is_not_part_of_word() {
        assert_eq!(
            words("the students' books"),
            vec!["the", "students", "books"]
        );
    }

    #[test]
    fn content_words_drop_stop_words() {
        assert_eq!(
            content_words("Who was the first president of the United States?"),
            vec!["first", "president", "united", "states"]
        );
    }
}
