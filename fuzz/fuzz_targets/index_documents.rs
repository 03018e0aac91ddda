//! What `ansel index` reads: JSON lines and text documents, then their sentences. Any bytes give
//! documents or an error naming the file, never a panic.
#![no_main]
use ansel_index::documents::for_each_json_line;
use ansel_index::{document_sentences, Document, IndexError};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz.jsonl");
    let result = for_each_json_line(path, data, 1 << 16, |document| {
        let _ = document_sentences(&document);
        Ok::<(), IndexError>(())
    });
    if let Err(e) = result {
        assert!(e.to_string().contains("fuzz.jsonl"), "{e}");
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let document = Document {
            id: "fuzz".into(),
            title: "fuzz".into(),
            text: text.into(),
        };
        for sentence in document_sentences(&document) {
            assert!(!sentence.text.is_empty());
        }
    }
});
