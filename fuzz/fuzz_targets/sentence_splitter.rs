//! The sentence splitter: spans are in order, do not overlap, and lie on character boundaries.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let spans = ansel_text::split_sentences(text);
    let mut end = 0;
    for span in &spans {
        assert!(span.start >= end && span.start <= span.end && span.end <= text.len());
        assert!(text.is_char_boundary(span.start) && text.is_char_boundary(span.end));
        let _ = span.text(text);
        end = span.end;
    }
});
