//! The accept loop: hyper connections with a header-read timeout (which also ends idle
//! keep-alive connections: hyper starts it whenever a connection waits for a request head), a
//! write-stall timeout (a client that stops reading its answer is cut off, and the answer
//! freed), a bounded header buffer, retries held until the `Retry-After` their connection was
//! given, a cap on open connections (beyond it, a fast 503 and close),
//! and a shutdown that drains in-flight requests for a grace period, then returns whatever
//! stalled clients still hold.

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// Connection-level limits.
#[derive(Debug, Clone)]
pub struct ConnectionLimits {
    /// Time to receive a request head, and to wait for the next one on a kept-alive connection.
    pub header_timeout: Duration,
    /// Open connections; more are answered 503 and closed at once. Idle and slow clients cost
    /// a few kilobytes each until the header timeout closes them, so the cap can be high; it is
    /// lowered to what the open-file limit allows.
    pub max_connections: usize,
    /// After shutdown is asked for: time in-flight requests get to finish.
    pub grace: Duration,
    /// Time a response may wait for the client to read any of it before the connection is
    /// closed: a client that never reads cannot make the server hold its answers.
    pub write_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            header_timeout: Duration::from_secs(10),
            max_connections: 10_000,
            grace: Duration::from_secs(10),
            write_timeout: Duration::from_secs(10),
        }
    }
}

/// Largest request head (and read buffer) a connection may hold: bounds what a client that
/// never finishes its headers can make the server keep.
const MAX_BUFFER: usize = 64 * 1024;

const REFUSAL: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n\
Retry-After: 1\r\nConnection: close\r\nContent-Length: 76\r\n\r\n\
{\"error\":\"too many open connections; retry later\",\"error_type\":\"Overloaded\"}";

/// File descriptors kept for what is not a connection (index segments, models, logs).
const RESERVED_FILES: libc::rlim_t = 256;

/// Connections the open-file limit leaves room for, after raising its soft limit to the hard
/// one (Linux starts processes at 1024, which would stop a server long before its cap).
fn connections_allowed() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed by pointer.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return usize::MAX;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit = raised;
            }
        }
    }
    let files = limit.rlim_cur;
    usize::try_from(files.saturating_sub(RESERVED_FILES)).unwrap_or(usize::MAX)
}

/// Serves `router` on `listener` until `shutdown` resolves; then stops accepting, lets the
/// requests in flight finish for `limits.grace`, and returns.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let max_connections = limits.max_connections.min(connections_allowed()).max(1);
    if max_connections < limits.max_connections {
        eprintln!(
            "ansel serve: the open-file limit allows {max_connections} connections, not {}",
            limits.max_connections
        );
    }
    let slots = Arc::new(Semaphore::new(max_connections));
    let graceful = GracefulShutdown::new();
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(MAX_BUFFER)
        .keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                // Out of file descriptors or a connection reset before accept: keep serving.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tokio::spawn(async move {
                let mut stream = stream;
                let _ =
                    tokio::time::timeout(Duration::from_secs(1), stream.write_all(REFUSAL)).await;
            });
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = PacedRetries::new(router.clone());
        let stream = WriteStallLimit::new(stream, limits.write_timeout);
        let conn = builder.serve_connection(TokioIo::new(stream), service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
            drop(slot);
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(limits.grace, graceful.shutdown()).await;
    Ok(())
}

/// Longest a retry is held: a `Retry-After` estimate is capped here, so that a held request
/// still ends well within the shutdown grace period.
const MAX_HOLD: Duration = Duration::from_secs(5);

/// One connection's service: a request that arrives before the `Retry-After` of the 503 this
/// connection was just given waits until then, and is then handled like any other. A client that
/// honours `Retry-After` never waits; one that retries at once (a hammer) costs one refusal per
/// `Retry-After` instead of one per round trip, so refusing cannot eat the CPU that admitted
/// requests need. The wait is a timer: no thread and no admission slot is held meanwhile.
struct PacedRetries {
    inner: TowerToHyperService<Router>,
    /// When the last 503's `Retry-After` ends (HTTP/1.1 handles one request at a time per
    /// connection, so this is never contended).
    not_before: Arc<std::sync::Mutex<Option<Instant>>>,
}

impl PacedRetries {
    fn new(router: Router) -> Self {
        PacedRetries {
            inner: TowerToHyperService::new(router),
            not_before: Arc::default(),
        }
    }
}

/// The `Retry-After` of a 503 (whole seconds), capped at [`MAX_HOLD`].
fn retry_after(response: &axum::response::Response) -> Option<Duration> {
    if response.status() != hyper::StatusCode::SERVICE_UNAVAILABLE {
        return None;
    }
    let seconds: u64 = response
        .headers()
        .get(hyper::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .parse()
        .ok()?;
    Some(Duration::from_secs(seconds).min(MAX_HOLD))
}

impl hyper::service::Service<hyper::Request<hyper::body::Incoming>> for PacedRetries {
    type Response = axum::response::Response;
    type Error = std::convert::Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn call(&self, request: hyper::Request<hyper::body::Incoming>) -> Self::Future {
        let inner = self.inner.clone();
        let not_before = self.not_before.clone();
        Box::pin(async move {
            let hold = not_before.lock().map(|mut t| t.take()).unwrap_or(None);
            if let Some(until) = hold {
                tokio::time::sleep_until(until.into()).await;
            }
            let response = inner.call(request).await?;
            if let Some(after) = retry_after(&response) {
                if let Ok(mut t) = not_before.lock() {
                    *t = Some(Instant::now() + after);
                }
            }
            Ok(response)
        })
    }
}

/// A stream whose writes fail once none has made progress for `limit` (hyper has no write
/// timeout): the connection then closes and the response it held is freed.
struct WriteStallLimit<S> {
    inner: S,
    limit: Duration,
    /// Started when a write could not proceed; cleared by any progress.
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> WriteStallLimit<S> {
    fn new(inner: S, limit: Duration) -> Self {
        WriteStallLimit {
            inner,
            limit,
            stalled: None,
        }
    }

    /// `write`'s outcome, turned into an error once writes have been pending for `limit`.
    fn watch<T>(
        &mut self,
        cx: &mut Context<'_>,
        write: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if write.is_ready() {
            self.stalled = None;
            return write;
        }
        let limit = self.limit;
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match stalled.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client stopped reading its response",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteStallLimit<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteStallLimit<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let write = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch(cx, write)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let write = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch(cx, write)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let flush = Pin::new(&mut self.inner).poll_flush(cx);
        self.watch(cx, flush)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
