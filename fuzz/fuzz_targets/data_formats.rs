//! Every reader of `eval`/`rank`/`train` data: any bytes give questions or an error, never a
//! panic; errors name the file.
#![no_main]
use ansel_data::{CqaTask, Format};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz.input");
    let _ = Format::guess(path, data);
    for format in [
        Format::WikiQa,
        Format::TrecQa,
        Format::SelQa,
        Format::Squad,
        Format::Jsonl,
        Format::SemEval(CqaTask::A),
        Format::SemEval(CqaTask::B),
        Format::SemEval(CqaTask::C),
    ] {
        if let Err(e) = format.parse(path, data) {
            assert!(e.to_string().contains("fuzz.input"), "{e}");
        }
    }
});
