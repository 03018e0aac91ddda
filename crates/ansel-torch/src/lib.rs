//! libtorch plumbing shared by ansel's neural models (through the `tch`
//! crate): thread and seed set-up, checkpoints written atomically, the
//! warm-up + linear-decay learning-rate schedule, the point-wise and
//! list-wise AS2 losses, and [`AdamW`], the optimizer every checkpointing
//! trainer uses (its moments are saved, so `--resume` continues exactly).

use ansel_model::{ModelError, Result};
use std::path::Path;
use tch::{nn, Kind, Tensor};

pub use tch;

pub mod optim;
pub use optim::{
    clip_gradients, copy_into, expect_tensor, no_decay, parameter_count, read_tensors, trainable,
    write_tensors, zero_gradients, AdamW, RmsProp,
};

/// Uses `threads` intra-op threads (0: all cores) and seeds libtorch's RNG.
pub fn init(threads: usize, seed: u64) {
    let threads = if threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        threads
    };
    tch::set_num_threads(threads as i32);
    tch::manual_seed(seed as i64);
}

/// Makes glibc's allocator keep libtorch's per-batch activations in its heap
/// instead of mapping and unmapping them afresh for every batch; this alone
/// raises small-model scoring throughput by ~1.7x (docs/results/efficient-rankers.md).
/// The allocator is process-wide, so the binary calls this once at start-up,
/// before any tensor exists; a library never changes it behind a user's back.
/// Equivalent to `GLIBC_TUNABLES=glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=268435456`.
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // Blocks below this size are served from (and freed back to) the heap.
        const KEEP_BYTES: i32 = 256 << 20;
        // SAFETY: mallopt only changes allocator thresholds; it is called before other threads exist.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, KEEP_BYTES);
            libc::mallopt(libc::M_TRIM_THRESHOLD, KEEP_BYTES);
        }
    }
}

/// CPU time (user + system, all threads) this process has used so far, in seconds; `None`
/// where it cannot be read. On a shared machine a single-threaded job's CPU time is what its
/// wall time would be on an idle one.
pub fn cpu_seconds() -> Option<f64> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: getrusage only writes the struct it is given, and it was zeroed.
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) } != 0 {
            return None;
        }
        // SAFETY: initialised above (zeroed, then filled by getrusage).
        let usage = unsafe { usage.assume_init() };
        let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
        Some(secs(usage.ru_utime) + secs(usage.ru_stime))
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        None
    }
}

/// Converts a tch error into a model error.
pub fn backend(err: tch::TchError) -> ModelError {
    ModelError::Backend(err.to_string())
}

/// Saves every variable of `vs` as safetensors, atomically (temporary file + rename).
pub fn save_vars(vs: &nn::VarStore, path: &Path) -> Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // tch picks the file format from the extension, so the temporary name keeps it.
    let tmp = path.with_file_name(format!(".tmp-{}-{name}", std::process::id()));
    vs.save(&tmp).map_err(backend)?;
    std::fs::File::open(&tmp)
        .and_then(|f| f.sync_all())
        .map_err(|e| ModelError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| ModelError::io(path, e))
}

/// Loads variables saved by [`save_vars`] into `vs`; every variable must be present.
pub fn load_vars(vs: &mut nn::VarStore, path: &Path) -> Result<()> {
    vs.load(path).map_err(|e| ModelError::Format {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Linear warm-up from 0 to `peak` over `warmup` steps, then linear decay to 0 at `total`.
#[derive(Debug, Clone, Copy)]
pub struct WarmupLinear {
    pub peak: f64,
    pub warmup: usize,
    pub total: usize,
}

impl WarmupLinear {
    pub fn at(&self, step: usize) -> f64 {
        if step < self.warmup {
            return self.peak * (step + 1) as f64 / self.warmup as f64;
        }
        let remaining = self.total.saturating_sub(step) as f64;
        let span = self.total.saturating_sub(self.warmup).max(1) as f64;
        self.peak * (remaining / span).clamp(0.0, 1.0)
    }
}

/// Point-wise loss: binary cross-entropy of logits `[n]` against 0/1 labels `[n]` (or soft
/// targets in [0, 1], as distillation gives).
pub fn pointwise_bce(logits: &Tensor, labels: &Tensor) -> Tensor {
    logits.binary_cross_entropy_with_logits::<Tensor>(
        &labels.to_kind(Kind::Float),
        None,
        None,
        tch::Reduction::Mean,
    )
}

/// List-wise loss (thesis ch. 7): softmax over each question's candidates and
/// KL divergence to the gold labels normalised into a distribution.
/// `logits` and `labels` are `[questions, candidates]`; `mask` is 1 for real
/// candidates and 0 for padding. Questions without a positive contribute 0.
pub fn listwise_kl(logits: &Tensor, labels: &Tensor, mask: &Tensor) -> Tensor {
    listwise_kl_to(logits, &gold_distribution(labels, mask), mask)
}

/// The gold labels of each row normalised into a distribution over its real candidates
/// (`[questions, candidates]`; a row without a positive is all 0).
pub fn gold_distribution(labels: &Tensor, mask: &Tensor) -> Tensor {
    let mask = mask.to_kind(Kind::Float);
    let labels = labels.to_kind(Kind::Float) * &mask;
    let positives = labels.sum_dim_intlist(-1, true, Kind::Float);
    &labels / positives.clamp_min(1.0)
}

/// Softmax of `scores / temperature` over each row's real candidates (padding gets 0).
pub fn soft_distribution(scores: &Tensor, mask: &Tensor, temperature: f64) -> Tensor {
    let mask = mask.to_kind(Kind::Float);
    let masked = scores.to_kind(Kind::Float) / temperature + (mask.ones_like() - &mask) * -1e9;
    masked.softmax(-1, Kind::Float) * &mask
}

/// KL divergence from `target` (`[questions, candidates]`, each row a distribution over its
/// real candidates, or all 0: that row contributes nothing) to the softmax of `logits`,
/// averaged over the rows with a target.
pub fn listwise_kl_to(logits: &Tensor, target: &Tensor, mask: &Tensor) -> Tensor {
    let mask = mask.to_kind(Kind::Float);
    let masked = logits + (mask.ones_like() - &mask) * -1e9;
    let log_probs = masked.log_softmax(-1, Kind::Float);
    // KL(target || p) = sum target * (log target - log p); 0 * log 0 taken as 0.
    let log_target = target.clamp_min(1e-12).log();
    let per_question = (target * (log_target - log_probs)).sum_dim_intlist(-1, false, Kind::Float);
    let answered = target
        .sum_dim_intlist(-1, false, Kind::Float)
        .gt(0.0)
        .to_kind(Kind::Float);
    (per_question * &answered).sum(Kind::Float) / answered.sum(Kind::Float).clamp_min(1.0)
}

/// Principal component analysis of the rows of `x` (`[n, d]`, n >= 2, in double precision):
/// the centred rows, the top `k` principal axes as columns (`[d, k]`, by descending variance,
/// each signed so that its largest loading is positive, so the result does not depend on the
/// eigen-solver's sign choice) and their variances (`[k]`).
pub fn principal_axes(x: &Tensor, k: usize) -> (Tensor, Tensor, Tensor) {
    let (n, d) = (x.size()[0], x.size()[1]);
    let centred = x - x.mean_dim([0i64].as_slice(), true, Kind::Double);
    let covariance = centred.transpose(0, 1).matmul(&centred) / (n as f64 - 1.0);
    // Ascending eigenvalues: the last `k` columns are the principal axes.
    let (values, axes) = covariance.linalg_eigh("L");
    let top = axes.narrow(1, d - k as i64, k as i64).flip([1]);
    let variances = values.narrow(0, d - k as i64, k as i64).flip([0]);
    let pivot = top.abs().argmax(0, true);
    let signs = top.gather(0, &pivot, false).sign();
    (centred, top * signs, variances)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_warms_up_then_decays_to_zero() {
        let s = WarmupLinear {
            peak: 1.0,
            warmup: 10,
            total: 110,
        };
        assert!((s.at(0) - 0.1).abs() < 1e-12);
        assert!((s.at(9) - 1.0).abs() < 1e-12);
        assert!((s.at(60) - 0.5).abs() < 1e-12);
        assert_eq!(s.at(110), 0.0);
        assert_eq!(s.at(500), 0.0);
    }

    #[test]
    fn listwise_loss_is_zero_for_a_perfect_peaked_ranking_and_ignores_padding() {
        let labels = Tensor::from_slice(&[0f32, 1., 0., 0.]).view([1, 4]);
        let mask = Tensor::from_slice(&[1f32, 1., 1., 0.]).view([1, 4]);
        let good = Tensor::from_slice(&[-50f32, 50., -50., 99.]).view([1, 4]);
        let bad = Tensor::from_slice(&[50f32, -50., -50., 99.]).view([1, 4]);
        let good_loss = listwise_kl(&good, &labels, &mask).double_value(&[]);
        let bad_loss = listwise_kl(&bad, &labels, &mask).double_value(&[]);
        assert!(good_loss < 1e-6, "{good_loss}");
        assert!(bad_loss > 10.0, "{bad_loss}");
        // A question with no positive adds nothing.
        let none = Tensor::zeros([1, 4], (Kind::Float, tch::Device::Cpu));
        assert_eq!(listwise_kl(&bad, &none, &mask).double_value(&[]), 0.0);
    }

    #[test]
    fn cpu_time_grows_with_work() {
        let Some(before) = cpu_seconds() else { return };
        let mut x = 0u64;
        let started = std::time::Instant::now();
        while started.elapsed().as_millis() < 50 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(std::hint::black_box(1));
        }
        std::hint::black_box(x);
        assert!(cpu_seconds().unwrap() > before);
    }

    #[test]
    fn bce_matches_the_closed_form() {
        let loss = pointwise_bce(&Tensor::from_slice(&[0f32]), &Tensor::from_slice(&[1i64]));
        assert!((loss.double_value(&[]) - std::f64::consts::LN_2).abs() < 1e-6);
    }

    #[test]
    fn checkpoints_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.safetensors");
        let vs = nn::VarStore::new(tch::Device::Cpu);
        let lin = nn::linear(vs.root() / "lin", 3, 2, Default::default());
        save_vars(&vs, &path).unwrap();
        let mut other = nn::VarStore::new(tch::Device::Cpu);
        let lin2 = nn::linear(other.root() / "lin", 3, 2, Default::default());
        load_vars(&mut other, &path).unwrap();
        assert!(lin.ws.allclose(&lin2.ws, 0.0, 0.0, false));
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary left"
        );
    }
}
