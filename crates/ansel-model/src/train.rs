//! Pieces every trainer shares: the JSON-lines training log, early stopping
//! on dev MAP and a progress bar with loss and pairs/s.

use crate::{ModelError, Result};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Appends one JSON object per line to `train-log.jsonl`, flushed and synced
/// per entry so that a killed run keeps its history (and a resumed run extends it).
pub struct TrainingLog {
    path: PathBuf,
    file: File,
}

impl TrainingLog {
    pub const FILE: &'static str = "train-log.jsonl";

    pub fn open(dir: &Path) -> Result<TrainingLog> {
        std::fs::create_dir_all(dir).map_err(|e| ModelError::io(dir, e))?;
        let path = dir.join(Self::FILE);
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| ModelError::io(&path, e))?;
        Ok(TrainingLog { path, file })
    }

    pub fn append(&mut self, entry: &serde_json::Value) -> Result<()> {
        let line = format!("{entry}\n");
        self.file
            .write_all(line.as_bytes())
            .and_then(|_| self.file.sync_data())
            .map_err(|e| ModelError::io(&self.path, e))
    }

    /// Every entry logged so far (for plots and resumption).
    pub fn read(dir: &Path) -> Result<Vec<serde_json::Value>> {
        let path = dir.join(Self::FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(ModelError::io(&path, e)),
        };
        // A line cut short by a crash is dropped, not fatal.
        Ok(text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect())
    }
}

/// Stops training when dev MAP has not improved for `patience` evaluations.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct EarlyStopping {
    pub patience: usize,
    pub best: Option<f64>,
    pub best_epoch: Option<usize>,
    pub since_best: usize,
}

impl EarlyStopping {
    pub fn new(patience: usize) -> Self {
        EarlyStopping {
            patience,
            best: None,
            best_epoch: None,
            since_best: 0,
        }
    }

    /// Records an evaluation; returns true when it is a new best (keep these weights).
    pub fn observe(&mut self, epoch: usize, metric: f64) -> bool {
        if self.best.is_none_or(|best| metric > best) {
            self.best = Some(metric);
            self.best_epoch = Some(epoch);
            self.since_best = 0;
            true
        } else {
            self.since_best += 1;
            false
        }
    }

    pub fn should_stop(&self) -> bool {
        self.since_best >= self.patience
    }
}

/// A progress bar that shows the running loss and throughput in pairs/s.
pub struct Progress {
    bar: indicatif::ProgressBar,
    started: Instant,
    pairs: u64,
}

impl Progress {
    /// `total` steps; hidden when stderr is not a terminal (CI logs stay clean).
    pub fn new(total: u64, label: &str) -> Progress {
        let bar = indicatif::ProgressBar::new(total);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{prefix} [{bar:30}] {pos}/{len} {msg} eta {eta}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        bar.set_prefix(label.to_string());
        Progress {
            bar,
            started: Instant::now(),
            pairs: 0,
        }
    }

    /// Advances one step that processed `pairs` (question, candidate) pairs.
    pub fn step(&mut self, pairs: u64, loss: f64) {
        self.pairs += pairs;
        let rate = self.pairs as f64 / self.started.elapsed().as_secs_f64().max(1e-9);
        self.bar
            .set_message(format!("loss {loss:.4} {rate:.0} pairs/s"));
        self.bar.inc(1);
    }

    pub fn finish(self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn early_stopping_waits_for_patience() {
        let mut stop = EarlyStopping::new(2);
        assert!(stop.observe(1, 0.5));
        assert!(!stop.observe(2, 0.5), "equal is not better");
        assert!(!stop.should_stop());
        assert!(!stop.observe(3, 0.4));
        assert!(stop.should_stop());
        assert_eq!((stop.best, stop.best_epoch), (Some(0.5), Some(1)));
        assert!(stop.observe(4, 0.6));
        assert!(!stop.should_stop());
    }

    #[test]
    fn log_survives_a_torn_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = TrainingLog::open(dir.path()).unwrap();
        log.append(&serde_json::json!({"step": 1, "loss": 0.7}))
            .unwrap();
        log.append(&serde_json::json!({"step": 2, "loss": 0.6}))
            .unwrap();
        drop(log);
        let path = dir.path().join(TrainingLog::FILE);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"step\": 3, \"lo");
        std::fs::write(&path, text).unwrap();
        let entries = TrainingLog::read(dir.path()).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1]["loss"], 0.6);
    }
}
