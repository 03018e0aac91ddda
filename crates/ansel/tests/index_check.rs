//! A damaged index is found and named: `ansel index --check` and `ansel ask` (which checks the
//! index it opens) name the damaged file of a copy in which 16 bytes were flipped or 64 zeroed, in
//! the middle of the file or in its footer, for every kind of file tantivy writes, and leave an
//! intact index alone.

use std::path::Path;

mod common;
use common::{ansel, ok, root};

/// Flips 16 bytes or zeroes 64, from the middle of the file or from 40 bytes before its end
/// (tantivy's footer: its checksum and version).
fn damage(path: &Path, flip: bool, footer: bool) {
    let mut bytes = std::fs::read(path).unwrap();
    let n = bytes.len();
    assert!(n > 0, "{}", path.display());
    let at = if footer { n.saturating_sub(40) } else { n / 2 };
    for i in 0..if flip { 16 } else { 64 } {
        let b = &mut bytes[(at + i) % n];
        *b = if flip { *b ^ 0x5a } else { 0 };
    }
    std::fs::write(path, bytes).unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[test]
fn every_damaged_index_file_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let intact = tmp.path().join("intact");
    let corpus = root().join("examples/corpus");
    ok(&ansel(&[
        "index",
        "--index",
        intact.to_str().unwrap(),
        corpus.to_str().unwrap(),
    ]));
    let out = ok(&ansel(&[
        "index",
        "--check",
        "--index",
        intact.to_str().unwrap(),
    ]));
    assert!(out.contains("every file checked"), "{out}");
    let files: Vec<String> = std::fs::read_dir(&intact)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    for ext in [
        ".idx",
        ".pos",
        ".term",
        ".fieldnorm",
        ".fast",
        ".store",
        ".managed.json",
        "meta.json",
    ] {
        let name = files
            .iter()
            .find(|f| f.ends_with(ext))
            .unwrap_or_else(|| panic!("no {ext} file in {files:?}"));
        for (flip, footer) in [(true, false), (false, false), (true, true)] {
            let copy = tmp.path().join(format!("copy{ext}-{flip}-{footer}"));
            copy_dir(&intact, &copy);
            damage(&copy.join(name), flip, footer);
            for args in [
                vec!["index", "--check", "--index", copy.to_str().unwrap()],
                vec![
                    "ask",
                    "--index",
                    copy.to_str().unwrap(),
                    "--prune-model",
                    "none",
                    "--model",
                    "bm25",
                    "Who invented the Fresnel lens?",
                ],
            ] {
                let out = ansel(&args);
                let err = String::from_utf8_lossy(&out.stderr);
                assert!(
                    !out.status.success(),
                    "{ext} flip={flip} footer={footer} {args:?}: exit 0"
                );
                assert!(
                    err.contains(name.as_str()),
                    "{ext} flip={flip} footer={footer} {args:?}: {err}"
                );
                assert!(
                    err.contains(copy.to_str().unwrap()),
                    "names the index: {err}"
                );
                // Called damage, with what to do, not a reader's error that happens to name it.
                assert!(
                    err.contains("damaged") && err.contains("rebuild"),
                    "{ext} flip={flip} footer={footer} {args:?}: {err}"
                );
            }
        }
    }
}
