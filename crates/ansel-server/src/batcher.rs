//! Batching of concurrent requests under deadlines: a worker thread takes every job waiting in its
//! queue (up to a maximum) and hands them to one handler call, so a model scores concurrent
//! requests together. Every job carries its deadline: a job that cannot be answered in time is
//! refused when it arrives (the batch being scored and the queue ahead of it would outlast its
//! deadline) and dropped unscored when its batch forms (expired, or its caller gone), so that
//! under overload the worker spends its time only on answers somebody still waits for. A batch is
//! bounded by its jobs' total cost (tokens to score), not only by their number, and by their
//! deadlines: a job joins only if the batch still ends before each member's.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Why a job got no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchError {
    /// The queue is full: the server is overloaded.
    QueueFull,
    /// The work queued ahead would outlast the deadline: refused at once, retry after this long.
    WouldMissDeadline { retry_after: Duration },
    /// The deadline passed before the job's batch formed; it was not scored.
    Expired,
    /// The worker has stopped (its handler panicked, or the server is shutting down).
    WorkerGone,
}

struct Job<Req, Resp> {
    request: Req,
    deadline: Instant,
    cost: usize,
    reply: oneshot::Sender<Result<Resp, BatchError>>,
}

/// What the queue and the worker share: the jobs waiting and their cost, when the batch being
/// scored should end, and how long a batch of some cost takes to score ([`CostModel`]): the
/// estimate behind admission and batching.
struct Load {
    queued: AtomicUsize,
    queued_cost: AtomicUsize,
    cost_model: Mutex<CostModel>,
    /// Nanoseconds after `epoch` at which the batch being scored should end (0: none is).
    busy_until: AtomicU64,
    epoch: Instant,
}

/// A batch's time as a fixed part plus a part per unit of cost, fitted by least squares on the
/// batches scored, the older ones forgotten geometrically. A fixed part matters: a model's pass
/// has overheads that do not grow with the words, and dividing a tiny request's time by its few
/// words made every unit look dear (a one-word probe made a 30-text request look 2 s long).
#[derive(Debug, Clone, Default)]
struct CostModel {
    /// Weighted sums of 1, cost, cost², time and cost x time over the batches seen.
    n: f64,
    x: f64,
    xx: f64,
    y: f64,
    xy: f64,
}

/// How much longer than its estimate the work ahead of a job may take and still leave the job its
/// answer in time: a busy worker admits a job only with this margin. Admitted to the edge, a job
/// expired in the queue whenever the batches ahead ran a little slow (under a retry hammer
/// sharing the cores, by a third), and its place was refused to others meanwhile.
const ADMISSION_MARGIN: f64 = 1.25;

/// The weight a batch keeps after each newer one (about the last 10 batches count).
const FORGET: f64 = 0.9;

impl CostModel {
    fn observe(&mut self, cost: usize, nanos: f64) {
        let x = cost as f64;
        for sum in [
            &mut self.n,
            &mut self.x,
            &mut self.xx,
            &mut self.y,
            &mut self.xy,
        ] {
            *sum *= FORGET;
        }
        self.n += 1.0;
        self.x += x;
        self.xx += x * x;
        self.y += nanos;
        self.xy += x * nanos;
    }

    /// (fixed, per unit) nanoseconds, both at least 0. A fixed part is fitted only where the
    /// batches' costs differ enough to tell it (by more than 10% around their mean) and the fit
    /// is sound (time grows with cost, the fixed part is not negative); otherwise the time is
    /// taken as proportional to the cost. Batches of about the same cost whose times happened to
    /// fall as the cost rose made a constant model once, which priced 16 queued jobs as one.
    fn fit(&self) -> (f64, f64) {
        if self.n == 0.0 {
            return (0.0, 0.0);
        }
        let proportional = (0.0, self.xy / self.xx.max(1.0));
        let mean = self.x / self.n;
        let variance = self.xx / self.n - mean * mean;
        if variance <= 0.01 * mean * mean {
            return proportional;
        }
        let per_unit = (self.n * self.xy - self.x * self.y) / (self.n * self.n * variance);
        let fixed = (self.y - per_unit * self.x) / self.n;
        if per_unit <= 0.0 || fixed < 0.0 {
            return proportional;
        }
        (fixed, per_unit)
    }

    fn time_for(&self, cost: usize) -> Duration {
        let (fixed, per_unit) = self.fit();
        Duration::from_nanos((fixed + per_unit * cost as f64).max(0.0) as u64)
    }
}

impl Load {
    fn new() -> Load {
        Load {
            queued: AtomicUsize::new(0),
            queued_cost: AtomicUsize::new(0),
            cost_model: Mutex::new(CostModel::default()),
            busy_until: AtomicU64::new(0),
            epoch: Instant::now(),
        }
    }

    /// The expected time of a batch of `cost` (zero before any batch has been scored).
    fn time_for(&self, cost: usize) -> Duration {
        self.cost_model
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .time_for(cost)
    }

    fn waiting(&self, job_cost: usize) {
        self.queued.fetch_add(1, Ordering::Relaxed);
        self.queued_cost.fetch_add(job_cost, Ordering::Relaxed);
    }

    fn taken(&self, job_cost: usize) {
        self.queued.fetch_sub(1, Ordering::Relaxed);
        self.queued_cost.fetch_sub(job_cost, Ordering::Relaxed);
    }

    fn scoring_until(&self, end: Option<Instant>) {
        let nanos = end.map_or(0, |end| {
            (end.saturating_duration_since(self.epoch).as_nanos() as u64).max(1)
        });
        self.busy_until.store(nanos, Ordering::Relaxed);
    }

    fn batch_ended(&self, cost: usize, took: Duration) {
        self.cost_model
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .observe(cost, took.as_nanos() as f64);
    }

    /// Whether any batch has been timed yet (before that, [`Load::time_for`] knows nothing).
    fn has_observed(&self) -> bool {
        self.cost_model.lock().unwrap_or_else(|p| p.into_inner()).n > 0.0
    }

    /// Whether a batch is being scored now.
    fn scoring(&self) -> bool {
        self.busy_until.load(Ordering::Relaxed) != 0
    }

    /// What is left of the batch being scored, by the estimate it started with.
    fn scoring_left(&self) -> Duration {
        match self.busy_until.load(Ordering::Relaxed) {
            0 => Duration::ZERO,
            nanos => {
                (self.epoch + Duration::from_nanos(nanos)).saturating_duration_since(Instant::now())
            }
        }
    }
}

/// A queue in front of a handler that answers jobs in batches.
pub struct Batcher<Req, Resp> {
    queue: SyncSender<Job<Req, Resp>>,
    load: Arc<Load>,
}

/// How big a batch may get.
#[derive(Debug, Clone, Copy)]
pub struct BatchLimits {
    /// Jobs per batch.
    pub max_jobs: usize,
    /// Total cost of a batch's jobs (a job costlier than this is batched alone).
    pub max_cost: usize,
    /// Jobs that may wait; beyond that [`BatchError::QueueFull`].
    pub queue_len: usize,
}

impl<Req: Send + 'static, Resp: Send + 'static> Batcher<Req, Resp> {
    /// Starts a worker thread. `handler` gets the requests of one batch (within `limits`) and
    /// returns one response per request, in order.
    pub fn spawn(
        name: &str,
        limits: BatchLimits,
        handler: impl FnMut(Vec<Req>) -> Vec<Resp> + Send + 'static,
    ) -> Self {
        let (queue, jobs) = mpsc::sync_channel(limits.queue_len.max(1));
        let load = Arc::new(Load::new());
        let limits = BatchLimits {
            max_jobs: limits.max_jobs.max(1),
            ..limits
        };
        let worker_load = load.clone();
        std::thread::Builder::new()
            .name(format!("ansel-{name}"))
            .spawn(move || work(jobs, limits, &worker_load, handler))
            .expect("spawn batch worker thread");
        Batcher { queue, load }
    }

    /// Queues a request of `cost` due by `deadline` and waits for its response. A caller that
    /// stops waiting (a timeout) drops its job before the worker spends time on it.
    pub async fn submit(
        &self,
        request: Req,
        cost: usize,
        deadline: Instant,
    ) -> Result<Resp, BatchError> {
        let response = self.enqueue(request, cost, deadline)?;
        response.await.map_err(|_| BatchError::WorkerGone)?
    }

    /// The expected wait of a job of `cost` queued now: the rest of the batch being scored, the
    /// work queued ahead of it and its own.
    pub fn expected_wait(&self, cost: usize) -> Duration {
        let ahead = self.load.queued_cost.load(Ordering::Relaxed);
        self.load.scoring_left() + self.load.time_for(ahead + cost.max(1))
    }

    /// Whether a job of `cost` due by `deadline` would be queued now: callers check before
    /// they spend time preparing a request that would be refused. A job is refused only for work
    /// queued or being scored ahead of it: an idle worker takes any job the request limits let
    /// through (an estimate must never refuse on its own, with no batch to correct it).
    pub fn admits(&self, cost: usize, deadline: Instant) -> Result<(), BatchError> {
        let busy = self.load.queued.load(Ordering::Relaxed) > 0 || self.load.scoring();
        if !busy {
            return Ok(());
        }
        let wait = self.expected_wait(cost);
        if Instant::now() + wait.mul_f64(ADMISSION_MARGIN) > deadline {
            return Err(BatchError::WouldMissDeadline { retry_after: wait });
        }
        Ok(())
    }

    /// Queues a request; its response arrives on the returned channel.
    pub fn enqueue(
        &self,
        request: Req,
        cost: usize,
        deadline: Instant,
    ) -> Result<oneshot::Receiver<Result<Resp, BatchError>>, BatchError> {
        let cost = cost.max(1);
        self.admits(cost, deadline)?;
        let (reply, response) = oneshot::channel();
        self.load.waiting(cost);
        self.queue
            .try_send(Job {
                request,
                deadline,
                cost,
                reply,
            })
            .map_err(|e| {
                self.load.taken(cost);
                match e {
                    TrySendError::Full(_) => BatchError::QueueFull,
                    TrySendError::Disconnected(_) => BatchError::WorkerGone,
                }
            })?;
        Ok(response)
    }
}

fn work<Req, Resp>(
    jobs: Receiver<Job<Req, Resp>>,
    limits: BatchLimits,
    load: &Load,
    mut handler: impl FnMut(Vec<Req>) -> Vec<Resp>,
) {
    // A job taken from the queue that did not fit the last batch opens the next one; it still
    // counts as waiting meanwhile, so that admission sees it.
    let mut carried: Option<Job<Req, Resp>> = None;
    loop {
        let first = match carried.take() {
            Some(job) => job,
            None => match jobs.recv() {
                Ok(job) => job,
                Err(_) => return,
            },
        };
        load.taken(first.cost);
        if first.reply.is_closed() {
            continue;
        }
        // A job that cannot be answered by its deadline is dropped now: scoring it would only
        // delay the jobs waiting behind for an answer nobody waits for. With none waiting, only a
        // job already past its deadline goes (and its batch corrects a stale estimate).
        let now = Instant::now();
        let others_wait = load.queued.load(Ordering::Relaxed) > 0;
        let own_end = if others_wait {
            now + load.time_for(first.cost)
        } else {
            now
        };
        if first.deadline <= own_end {
            let _ = first.reply.send(Err(BatchError::Expired));
            continue;
        }
        // Every answer of a batch arrives when the whole batch is done: a job joins only when
        // the batch with it still ends before each member's deadline; otherwise it opens the
        // next batch.
        let mut cost = first.cost;
        let mut due = first.deadline;
        let mut live = vec![first];
        // Before any batch has been timed the estimate is nothing: the first job is scored alone
        // (eight long /ask jobs batched blind took 4 s and all missed their deadlines).
        let batch_max = if load.has_observed() {
            limits.max_jobs
        } else {
            1
        };
        while live.len() < batch_max {
            let Ok(job) = jobs.try_recv() else { break };
            if job.reply.is_closed() {
                load.taken(job.cost);
                continue;
            }
            let end = now + load.time_for(cost + job.cost);
            if cost + job.cost > limits.max_cost || end >= due.min(job.deadline) {
                carried = Some(job);
                break;
            }
            load.taken(job.cost);
            cost += job.cost;
            due = due.min(job.deadline);
            live.push(job);
        }
        let live_cost = cost;
        // A batch is not expected to outlast its last member's deadline: past it nobody waits,
        // and the handlers give up (a rerank list between slices, /ask's cascade within its
        // budget). A list too long for its deadline made admission wait out its whole estimate.
        let latest = live.iter().map(|j| j.deadline).max().unwrap_or(now);
        load.scoring_until(Some((now + load.time_for(live_cost)).min(latest)));
        let (requests, replies): (Vec<Req>, Vec<_>) =
            live.into_iter().map(|j| (j.request, j.reply)).unzip();
        let started = Instant::now();
        let responses = handler(requests);
        load.batch_ended(live_cost, started.elapsed());
        load.scoring_until(None);
        for (reply, response) in replies.into_iter().zip(responses) {
            // The caller may have timed out meanwhile; nobody is left to tell.
            let _ = reply.send(Ok(response));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::{channel, Sender};
    use std::sync::Mutex;

    /// A batcher whose handler multiplies by 10 and records batch sizes, and
    /// which holds its first batch (after saying it started) until told to go.
    struct Gated {
        batcher: Batcher<u32, u32>,
        sizes: Arc<Mutex<Vec<usize>>>,
        started: Receiver<()>,
        go: Sender<()>,
    }

    fn gated(max_batch: usize, queue_len: usize) -> Gated {
        let (started_tx, started) = channel();
        let (go, go_rx) = channel::<()>();
        let sizes = Arc::new(Mutex::new(Vec::new()));
        let seen = sizes.clone();
        let limits = BatchLimits {
            max_jobs: max_batch,
            max_cost: 100,
            queue_len,
        };
        let batcher = Batcher::spawn("test", limits, move |reqs: Vec<u32>| {
            if seen.lock().unwrap().is_empty() {
                started_tx.send(()).unwrap();
                go_rx.recv().unwrap();
            }
            seen.lock().unwrap().push(reqs.len());
            reqs.into_iter().map(|r| r * 10).collect()
        });
        Gated {
            batcher,
            sizes,
            started,
            go,
        }
    }

    fn later() -> Instant {
        Instant::now() + Duration::from_secs(60)
    }

    #[tokio::test]
    async fn queued_requests_are_handled_together_in_order() {
        let Gated {
            batcher,
            sizes,
            started,
            go,
        } = gated(4, 16);
        let first = batcher.enqueue(1, 1, later()).unwrap();
        started.recv().unwrap();
        let rest: Vec<_> = (2..=7)
            .map(|r| batcher.enqueue(r, 1, later()).unwrap())
            .collect();
        go.send(()).unwrap();
        assert_eq!(first.await, Ok(Ok(10)));
        for (r, response) in (2..=7).zip(rest) {
            assert_eq!(response.await, Ok(Ok(r * 10)));
        }
        assert_eq!(*sizes.lock().unwrap(), vec![1, 4, 2]);
    }

    #[tokio::test]
    async fn a_full_queue_refuses_and_abandoned_or_expired_jobs_are_not_scored() {
        let Gated {
            batcher,
            sizes,
            started,
            go,
        } = gated(8, 3);
        let first = batcher.enqueue(1, 1, later()).unwrap();
        started.recv().unwrap();
        let abandoned = batcher.enqueue(2, 1, later()).unwrap();
        let kept = batcher.enqueue(3, 1, later()).unwrap();
        let expiring = batcher
            .enqueue(5, 1, Instant::now() + Duration::from_millis(20))
            .unwrap();
        assert_eq!(
            batcher.enqueue(4, 1, later()).err(),
            Some(BatchError::QueueFull)
        );
        drop(abandoned);
        std::thread::sleep(Duration::from_millis(40));
        go.send(()).unwrap();
        assert_eq!(first.await, Ok(Ok(10)));
        assert_eq!(kept.await, Ok(Ok(30)));
        assert_eq!(expiring.await, Ok(Err(BatchError::Expired)));
        assert_eq!(*sizes.lock().unwrap(), vec![1, 1], "only live jobs scored");
    }

    #[tokio::test]
    async fn batches_are_bounded_by_cost_and_a_costly_job_goes_alone() {
        let Gated {
            batcher,
            sizes,
            started,
            go,
        } = gated(8, 16);
        let first = batcher.enqueue(1, 1, later()).unwrap();
        started.recv().unwrap();
        // Costs 40, 40, 40, 500, 10 against a cost bound of 100: [40, 40] [40] [500] [10].
        let rest: Vec<_> = [(2, 40), (3, 40), (4, 40), (5, 500), (6, 10)]
            .into_iter()
            .map(|(r, cost)| batcher.enqueue(r, cost, later()).unwrap())
            .collect();
        go.send(()).unwrap();
        assert_eq!(first.await, Ok(Ok(10)));
        for (r, response) in (2..=6).zip(rest) {
            assert_eq!(response.await, Ok(Ok(r * 10)));
        }
        assert_eq!(*sizes.lock().unwrap(), vec![1, 2, 1, 1, 1]);
    }

    #[tokio::test]
    async fn the_first_batch_is_one_job_until_a_batch_has_been_timed() {
        let (batcher, sizes) = timed(Duration::from_millis(50), 8);
        let replies: Vec<_> = (0..4)
            .map(|r| batcher.enqueue(r, 1, later()).unwrap())
            .collect();
        for (r, reply) in (0..4).zip(replies) {
            assert_eq!(reply.await, Ok(Ok(r)));
        }
        let sizes = sizes.lock().unwrap().clone();
        assert_eq!(sizes[0], 1, "{sizes:?}");
        assert!(sizes.len() < 4, "the jobs behind were batched: {sizes:?}");
    }

    #[tokio::test]
    async fn a_job_due_before_its_batch_would_finish_is_not_scored() {
        // Every batch takes 200 ms but the one with job 2, which takes 400 ms: longer than the
        // estimate that admitted the jobs behind it.
        let sizes = Arc::new(Mutex::new(Vec::new()));
        let seen = sizes.clone();
        let limits = BatchLimits {
            max_jobs: 1,
            max_cost: 100,
            queue_len: 64,
        };
        let batcher = Batcher::spawn("slow", limits, move |reqs: Vec<u32>| {
            seen.lock().unwrap().push(reqs.len());
            let ms = if reqs.contains(&2) { 400 } else { 200 };
            std::thread::sleep(Duration::from_millis(ms));
            reqs
        });
        // One batch teaches the worker that a job takes ~200 ms.
        assert_eq!(batcher.submit(1, 1, later()).await, Ok(1));
        let busy = batcher.enqueue(2, 1, later()).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        // Admitted (~180 ms left of the busy batch by the estimate, then ~200 ms of its own:
        // 475 ms with the admission margin, within 520 ms), but its batch forms only when the
        // busy one is done (~380 ms from now) and would end at ~580 ms, with another job waiting
        // behind it.
        let doomed = batcher
            .enqueue(3, 1, Instant::now() + Duration::from_millis(520))
            .unwrap();
        let behind = batcher.enqueue(4, 1, later()).unwrap();
        assert_eq!(busy.await, Ok(Ok(2)));
        assert_eq!(doomed.await, Ok(Err(BatchError::Expired)));
        assert_eq!(behind.await, Ok(Ok(4)));
        assert_eq!(sizes.lock().unwrap().len(), 3, "the doomed job was scored");
    }

    #[tokio::test]
    async fn a_job_the_queue_cannot_serve_in_time_is_refused_on_arrival() {
        let (batcher, _) = timed(Duration::from_millis(50), 1);
        // One batch teaches the worker that a batch takes ~50 ms.
        assert_eq!(batcher.submit(1, 1, later()).await, Ok(1));
        let queued: Vec<_> = (0..4)
            .map(|r| batcher.enqueue(r, 1, later()).unwrap())
            .collect();
        // Four batches ahead (~200 ms) cannot finish within 100 ms: refused now, not after 100 ms.
        let refused = batcher.enqueue(9, 1, Instant::now() + Duration::from_millis(100));
        match refused {
            Err(BatchError::WouldMissDeadline { retry_after }) => {
                assert!(retry_after >= Duration::from_millis(100), "{retry_after:?}")
            }
            other => panic!("expected a refusal, got {:?}", other.map(|_| ())),
        }
        for q in queued {
            assert!(q.await.unwrap().is_ok());
        }
    }
    /// A batcher whose handler takes `per_job` for each request and records batch sizes.
    fn timed(per_job: Duration, max_jobs: usize) -> (Batcher<u32, u32>, Arc<Mutex<Vec<usize>>>) {
        let sizes = Arc::new(Mutex::new(Vec::new()));
        let seen = sizes.clone();
        let limits = BatchLimits {
            max_jobs,
            max_cost: 100,
            queue_len: 64,
        };
        let batcher = Batcher::spawn("timed", limits, move |reqs: Vec<u32>| {
            seen.lock().unwrap().push(reqs.len());
            std::thread::sleep(per_job * reqs.len() as u32);
            reqs
        });
        (batcher, sizes)
    }

    #[tokio::test]
    async fn a_job_joins_a_batch_only_while_the_batch_ends_before_every_deadline() {
        let (batcher, sizes) = timed(Duration::from_millis(100), 8);
        // One batch teaches the worker that a job takes ~100 ms.
        assert_eq!(batcher.submit(1, 1, later()).await, Ok(1));
        let busy = batcher.enqueue(2, 1, later()).unwrap();
        std::thread::sleep(Duration::from_millis(10));
        // When the busy batch ends (~90 ms from now) `urgent` alone ends in time (~190 ms);
        // with `patient` beside it the batch would end at ~290 ms, after its deadline.
        let urgent = batcher
            .enqueue(3, 1, Instant::now() + Duration::from_millis(260))
            .unwrap();
        let patient = batcher.enqueue(4, 1, later()).unwrap();
        assert_eq!(busy.await, Ok(Ok(2)));
        assert_eq!(urgent.await, Ok(Ok(3)));
        assert_eq!(patient.await, Ok(Ok(4)));
        assert_eq!(*sizes.lock().unwrap(), vec![1, 1, 1, 1]);
    }

    #[tokio::test]
    async fn admission_counts_the_rest_of_the_batch_being_scored() {
        let (batcher, _) = timed(Duration::from_millis(200), 8);
        assert_eq!(batcher.submit(1, 1, later()).await, Ok(1));
        let busy = batcher.enqueue(2, 1, later()).unwrap();
        std::thread::sleep(Duration::from_millis(10));
        let queued = batcher.enqueue(3, 1, later()).unwrap();
        // Queued work and its own make ~400 ms, within 450; with the ~190 ms left of the busy
        // batch, ~590 ms: refused on arrival.
        match batcher.enqueue(4, 1, Instant::now() + Duration::from_millis(450)) {
            Err(BatchError::WouldMissDeadline { retry_after }) => {
                assert!(retry_after >= Duration::from_millis(450), "{retry_after:?}")
            }
            other => panic!("expected a refusal, got {:?}", other.map(|_| ())),
        }
        assert_eq!(busy.await, Ok(Ok(2)));
        assert_eq!(queued.await, Ok(Ok(3)));
    }

    #[tokio::test]
    async fn an_idle_worker_takes_any_job_whatever_its_estimate() {
        let (batcher, sizes) = timed(Duration::from_millis(100), 8);
        // One batch teaches the worker that a unit of cost takes ~100 ms.
        assert_eq!(batcher.submit(1, 1, later()).await, Ok(1));
        let soon = Instant::now() + Duration::from_millis(5000);
        // By that estimate it would take ~3 s, but nothing is ahead of it: taken, not refused.
        let taken = batcher.enqueue(2, 30, soon).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        // Behind it, work is being scored ahead: refused by the estimate.
        assert!(matches!(
            batcher.enqueue(3, 30, Instant::now() + Duration::from_millis(500)),
            Err(BatchError::WouldMissDeadline { .. })
        ));
        assert_eq!(taken.await, Ok(Ok(2)));
        assert_eq!(*sizes.lock().unwrap(), vec![1, 1]);
    }

    #[test]
    fn batches_of_about_one_cost_never_make_a_constant_model() {
        // Three 30-text requests, the dearest one timed fastest: a slope from that noise is
        // negative; the model stays proportional, so sixteen of them cost sixteen times one.
        let mut model = CostModel::default();
        for (cost, ms) in [(858, 817.0), (937, 761.0), (902, 778.0)] {
            model.observe(cost, ms * 1e6);
        }
        let one = model.time_for(900).as_secs_f64();
        let sixteen = model.time_for(16 * 900).as_secs_f64();
        assert!((sixteen / one - 16.0).abs() < 0.01, "{one} {sixteen}");
    }

    #[test]
    fn the_cost_model_separates_a_fixed_part_from_a_part_per_unit() {
        let mut model = CostModel::default();
        assert_eq!(model.time_for(100), Duration::ZERO, "nothing known yet");
        // Tiny probes alone: time proportional to cost, as before any spread of costs.
        for _ in 0..3 {
            model.observe(2, 40e6);
        }
        assert_eq!(model.time_for(2), Duration::from_millis(40));
        // 40 ms fixed + 1 ms a unit, seen at several costs: a 450-unit job takes ~490 ms,
        // not the 9 s that 20 ms a unit (the probes' ratio) would say.
        for cost in [2usize, 30, 100, 2, 250] {
            model.observe(cost, 40e6 + 1e6 * cost as f64);
        }
        let t = model.time_for(450).as_secs_f64();
        assert!((0.45..0.53).contains(&t), "{t}");
        let (fixed, per_unit) = model.fit();
        assert!(fixed > 0.0 && per_unit > 0.0, "{fixed} {per_unit}");
    }
}
