//! Helpers shared by the end-to-end tests: run the `ansel` binary as a user would.
// Each test file is its own crate and uses only some of these.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether every one of `paths` (benchmark data, vendored models) is there. Where one is missing
/// the test is to be skipped (false), which CI, which has them all, must not do.
pub fn present(paths: &[&Path]) -> bool {
    let missing: Vec<String> = paths
        .iter()
        .filter(|p| !p.exists())
        .map(|p| p.display().to_string())
        .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must have {}",
        missing.join(", ")
    );
    eprintln!("skipped: no {}", missing.join(", "));
    false
}

/// Runs `ansel` with these arguments; one intra-op thread, as the tests run side by side.
pub fn ansel(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ansel"))
        .args(args)
        .env("OMP_NUM_THREADS", "1")
        .output()
        .expect("run ansel")
}

/// The standard output of a run that must have succeeded (its standard error otherwise).
pub fn ok(output: &Output) -> String {
    assert!(
        output.status.success(),
        "ansel failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}
