//! Batching of concurrent requests: a worker thread takes every job waiting
//! in its queue (up to a maximum) and hands them to one handler call, so a
//! model scores concurrent requests together.

use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use tokio::sync::oneshot;

/// Why a job got no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchError {
    /// The queue is full: the server is overloaded.
    QueueFull,
    /// The worker has stopped (its handler panicked, or the server is shutting down).
    WorkerGone,
}

struct Job<Req, Resp> {
    request: Req,
    reply: oneshot::Sender<Resp>,
}

/// A queue in front of a handler that answers jobs in batches.
pub struct Batcher<Req, Resp> {
    queue: SyncSender<Job<Req, Resp>>,
}

impl<Req: Send + 'static, Resp: Send + 'static> Batcher<Req, Resp> {
    /// Starts a worker thread. `handler` gets at most `max_batch` requests at a
    /// time and returns one response per request, in order; at most
    /// `queue_len` jobs wait, beyond that [`BatchError::QueueFull`].
    pub fn spawn(
        name: &str,
        max_batch: usize,
        queue_len: usize,
        handler: impl FnMut(Vec<Req>) -> Vec<Resp> + Send + 'static,
    ) -> Self {
        let (queue, jobs) = mpsc::sync_channel(queue_len.max(1));
        std::thread::Builder::new()
            .name(format!("ansel-{name}"))
            .spawn(move || work(jobs, max_batch.max(1), handler))
            .expect("spawn batch worker thread");
        Batcher { queue }
    }

    /// Queues a request and waits for its response. A caller that stops
    /// waiting (a timeout) drops its job before the worker spends time on it.
    pub async fn submit(&self, request: Req) -> Result<Resp, BatchError> {
        let response = self.enqueue(request)?;
        response.await.map_err(|_| BatchError::WorkerGone)
    }

    /// Queues a request; its response arrives on the returned channel.
    pub fn enqueue(&self, request: Req) -> Result<oneshot::Receiver<Resp>, BatchError> {
        let (reply, response) = oneshot::channel();
        self.queue
            .try_send(Job { request, reply })
            .map_err(|e| match e {
                TrySendError::Full(_) => BatchError::QueueFull,
                TrySendError::Disconnected(_) => BatchError::WorkerGone,
            })?;
        Ok(response)
    }
}

fn work<Req, Resp>(
    jobs: Receiver<Job<Req, Resp>>,
    max_batch: usize,
    mut handler: impl FnMut(Vec<Req>) -> Vec<Resp>,
) {
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        while batch.len() < max_batch {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        batch.retain(|job| !job.reply.is_closed());
        if batch.is_empty() {
            continue;
        }
        let (requests, replies): (Vec<Req>, Vec<_>) =
            batch.into_iter().map(|j| (j.request, j.reply)).unzip();
        let responses = handler(requests);
        for (reply, response) in replies.into_iter().zip(responses) {
            // The caller may have timed out meanwhile; nobody is left to tell.
            let _ = reply.send(response);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::{channel, Sender};
    use std::sync::{Arc, Mutex};

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
        let batcher = Batcher::spawn("test", max_batch, queue_len, move |reqs: Vec<u32>| {
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

    #[tokio::test]
    async fn queued_requests_are_handled_together_in_order() {
        let Gated {
            batcher,
            sizes,
            started,
            go,
        } = gated(4, 16);
        let first = batcher.enqueue(1).unwrap();
        started.recv().unwrap();
        let rest: Vec<_> = (2..=7).map(|r| batcher.enqueue(r).unwrap()).collect();
        go.send(()).unwrap();
        assert_eq!(first.await, Ok(10));
        for (r, response) in (2..=7).zip(rest) {
            assert_eq!(response.await, Ok(r * 10));
        }
        assert_eq!(*sizes.lock().unwrap(), vec![1, 4, 2]);
    }

    #[tokio::test]
    async fn a_full_queue_refuses_and_abandoned_jobs_are_skipped() {
        let Gated {
            batcher,
            sizes,
            started,
            go,
        } = gated(8, 2);
        let first = batcher.enqueue(1).unwrap();
        started.recv().unwrap();
        let abandoned = batcher.enqueue(2).unwrap();
        let kept = batcher.enqueue(3).unwrap();
        assert_eq!(batcher.enqueue(4).err(), Some(BatchError::QueueFull));
        drop(abandoned);
        go.send(()).unwrap();
        assert_eq!(first.await, Ok(10));
        assert_eq!(kept.await, Ok(30));
        assert_eq!(*sizes.lock().unwrap(), vec![1, 1]);
    }
}
