//! Helpers shared by the end-to-end tests: run the `ansel` binary as a user would.
// Each test file is its own crate and uses only some of these.
#![allow(dead_code)]

use std::process::{Command, Output};

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
