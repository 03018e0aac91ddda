//! Ranking metrics as the AS2 literature computes them, trec_eval files, and calibration
//! (probabilities, reliability, abstention).
//!
//! **Tie rule.** Candidates are sorted by score, highest first; candidates
//! with equal scores are ordered *against the model*: a tied negative ranks
//! above a tied positive. A constant scorer therefore puts every positive
//! last and cannot look good. NaN scores rank below every number.

pub mod calibration;
mod metrics;
mod report;
mod trec;
mod treceval;

pub use metrics::{rank_order, QuestionMetrics, CUTOFFS};
pub use report::{evaluate, Filter, Report};
pub use trec::{join, read_qrels, read_run, write_qrels, write_run, Qrels, Run, TrecError};
pub use treceval::{
    measure_query, paired_randomization, read_run_exact, trec_eval, ExactRun, TrecMeasures,
    TrecReport,
};
