//! Ranking metrics as the AS2 literature computes them, trec_eval files, and calibration
//! (probabilities, reliability, abstention).
//!
//! **Tie rule.** Candidates are sorted by score, highest first; candidates
//! with equal scores are ordered *against the model*: a tied negative ranks
//! above a tied positive. A constant scorer therefore puts every positive
//! last and cannot look good. NaN scores rank below every number. The one exception is
//! SemEval-2016 Task 3's official scorer ([`semeval_scores`]), kept as the task defines it:
//! its stable sort leaves tied candidates in file order.

pub mod calibration;
mod metrics;
mod report;
mod semeval;
mod trec;
mod treceval;

#[cfg(test)]
mod test_data;

pub use metrics::{rank_order, QuestionMetrics, CUTOFFS};
pub use report::{evaluate, Filter, Report};
pub use semeval::{
    join_semeval, official_order, read_semeval_file, semeval_scores, write_semeval_gold,
    write_semeval_run, SemEvalLine, SemEvalScores, SEMEVAL_CUTOFF,
};
pub use trec::{join, read_qrels, read_run, write_qrels, write_run, Qrels, Run, TrecError};
pub use treceval::{
    measure_query, paired_randomization, read_run_exact, trec_eval, ExactRun, TrecMeasures,
    TrecReport,
};
