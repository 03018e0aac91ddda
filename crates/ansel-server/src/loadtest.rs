//! A bounded load test of a running server, on loopback only: a fixed number
//! of requests per endpoint from a few keep-alive connections, stopped early
//! at a time limit, then malformed and oversized requests that must get 4xx
//! while the server stays healthy. A client told 503 waits its `Retry-After`
//! before the next request, as a well-behaved client does, so a server past its
//! capacity is measured by what it answers (its goodput) and what it sheds.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// What to send.
pub struct LoadPlan {
    /// The server; must be a loopback address.
    pub addr: SocketAddr,
    /// Requests per endpoint.
    pub requests: usize,
    /// Connections sending at once.
    pub concurrency: usize,
    /// Time after which no new request starts, per endpoint.
    pub max_duration: Duration,
    /// Questions sent to `/ask` and as `/rerank` queries, in turn.
    pub questions: Vec<String>,
    /// Texts sent with each `/rerank` query.
    pub texts: Vec<String>,
}

/// Latency and throughput of one endpoint.
#[derive(Debug, Clone)]
pub struct EndpointLoad {
    pub endpoint: &'static str,
    pub requests: usize,
    /// Requests answered 200.
    pub ok: usize,
    /// Requests answered 503 with `Retry-After`: shed because they could not be answered in time.
    pub shed: usize,
    /// Latency of the requests answered 200.
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// Requests answered 200 per second of the endpoint's run.
    pub ok_per_s: f64,
}

/// A bad request, the status it must get and the status it got.
#[derive(Debug, Clone)]
pub struct AbuseCase {
    pub name: &'static str,
    pub expected: u16,
    pub got: Option<u16>,
}

#[derive(Debug, Clone)]
pub struct LoadReport {
    pub endpoints: Vec<EndpointLoad>,
    pub abuse: Vec<AbuseCase>,
    /// `/health` status after everything.
    pub healthy_after: bool,
    /// The models the server ranked with, as its `/health` names them.
    pub served_by: Option<String>,
    /// Mean requests per scored batch, per queue, as the server counted them.
    pub mean_batch_sizes: Vec<(String, f64)>,
}

impl LoadReport {
    /// Every request answered 200 or shed with 503 and `Retry-After` (and some answered), every
    /// bad one its 4xx, and the server is up.
    pub fn passed(&self) -> bool {
        self.healthy_after
            && self
                .endpoints
                .iter()
                .all(|e| e.ok > 0 && e.ok + e.shed == e.requests)
            && self.abuse.iter().all(|a| a.got == Some(a.expected))
    }
}

/// Runs the plan: `/rerank`, then `/ask`, then the bad requests.
pub fn run(plan: &LoadPlan, max_body_bytes: usize) -> std::io::Result<LoadReport> {
    if !plan.addr.ip().is_loopback() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{} is not a loopback address; load tests only target this machine",
                plan.addr
            ),
        ));
    }
    if plan.questions.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "no questions to send",
        ));
    }
    let rerank_bodies: Vec<String> = plan
        .questions
        .iter()
        .map(|q| serde_json::json!({"query": q, "texts": plan.texts}).to_string())
        .collect();
    let ask_bodies: Vec<String> = plan
        .questions
        .iter()
        .map(|q| serde_json::json!({"question": q, "top_k": 5}).to_string())
        .collect();
    let endpoints = vec![
        load(plan, "/rerank", &rerank_bodies)?,
        load(plan, "/ask", &ask_bodies)?,
    ];
    let abuse = abuse(plan.addr, max_body_bytes);
    let health = exchange(&mut connect(plan.addr)?, "GET", "/health", "")
        .ok()
        .filter(|r| r.status == 200);
    let served_by = health.as_ref().and_then(|r| {
        let h: serde_json::Value = serde_json::from_slice(&r.body).ok()?;
        Some(format!(
            "rerank model `{}`, prune model `{}`",
            h["rerank_model"].as_str()?,
            h["prune_model"].as_str().unwrap_or("none")
        ))
    });
    Ok(LoadReport {
        endpoints,
        abuse,
        healthy_after: health.is_some(),
        served_by,
        mean_batch_sizes: mean_batch_sizes(plan.addr)?,
    })
}

fn load(
    plan: &LoadPlan,
    endpoint: &'static str,
    bodies: &[String],
) -> std::io::Result<EndpointLoad> {
    let next = AtomicUsize::new(0);
    let start = Instant::now();
    let deadline = start + plan.max_duration;
    let per_thread: Vec<std::io::Result<Vec<(f64, Outcome)>>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..plan.concurrency.max(1))
            .map(|_| {
                scope.spawn(|| {
                    let mut connection = connect(plan.addr)?;
                    let mut samples = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= plan.requests || Instant::now() >= deadline {
                            return Ok(samples);
                        }
                        let sent = Instant::now();
                        let response =
                            exchange(&mut connection, "POST", endpoint, &bodies[i % bodies.len()])?;
                        let ms = sent.elapsed().as_secs_f64() * 1e3;
                        let outcome = match (response.status, response.retry_after) {
                            (200, _) => Outcome::Ok,
                            (503, Some(wait)) => {
                                std::thread::sleep(
                                    wait.min(deadline.saturating_duration_since(Instant::now())),
                                );
                                Outcome::Shed
                            }
                            _ => Outcome::Failed,
                        };
                        if response.closes {
                            connection = connect(plan.addr)?;
                        }
                        samples.push((ms, outcome));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("load worker panicked")))
            })
            .collect()
    });
    let wall_s = start.elapsed().as_secs_f64();
    let mut samples = Vec::new();
    for result in per_thread {
        samples.extend(result?);
    }
    let count = |o: Outcome| samples.iter().filter(|s| s.1 == o).count();
    let mut latencies: Vec<f64> = samples
        .iter()
        .filter(|s| s.1 == Outcome::Ok)
        .map(|s| s.0)
        .collect();
    latencies.sort_by(f64::total_cmp);
    Ok(EndpointLoad {
        endpoint,
        requests: samples.len(),
        ok: count(Outcome::Ok),
        shed: count(Outcome::Shed),
        p50_ms: percentile(&latencies, 0.50),
        p99_ms: percentile(&latencies, 0.99),
        max_ms: latencies.last().copied().unwrap_or(f64::NAN),
        ok_per_s: count(Outcome::Ok) as f64 / wall_s,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Ok,
    Shed,
    Failed,
}

/// Nearest-rank percentile of sorted values (NaN when there are none).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn abuse(addr: SocketAddr, max_body_bytes: usize) -> Vec<AbuseCase> {
    let many_texts = serde_json::json!({"query": "q", "texts": vec!["t"; 10_000]}).to_string();
    let oversized =
        serde_json::json!({"query": "q", "texts": ["x".repeat(max_body_bytes + 1)]}).to_string();
    let cases: [(&'static str, &str, &str, u16); 5] = [
        (
            "malformed JSON to /rerank",
            "/rerank",
            "{\"query\": \"q\", \"texts\": [",
            400,
        ),
        ("missing field in /ask", "/ask", "{\"top_k\": 3}", 422),
        ("10000 texts to /rerank", "/rerank", &many_texts, 413),
        (
            "body over the byte limit to /rerank",
            "/rerank",
            &oversized,
            413,
        ),
        (
            "top_k 0 to /ask",
            "/ask",
            "{\"question\": \"q\", \"top_k\": 0}",
            422,
        ),
    ];
    cases
        .into_iter()
        .map(|(name, path, body, expected)| AbuseCase {
            name,
            expected,
            // A fresh connection each: the server may close one after refusing a body.
            got: connect(addr)
                .and_then(|mut c| request(&mut c, "POST", path, body))
                .ok(),
        })
        .collect()
}

fn connect(addr: SocketAddr) -> std::io::Result<BufReader<TcpStream>> {
    let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    stream.set_nodelay(true)?;
    Ok(BufReader::new(stream))
}

/// Sends one HTTP/1.1 request on a keep-alive connection and reads the whole
/// response; returns its status.
fn request(
    connection: &mut BufReader<TcpStream>,
    method: &str,
    path: &str,
    body: &str,
) -> std::io::Result<u16> {
    exchange(connection, method, path, body).map(|r| r.status)
}

/// What a response said.
struct Response {
    status: u16,
    /// Its `Retry-After` (whole seconds).
    retry_after: Option<Duration>,
    /// `Connection: close`: the server closes the connection after it.
    closes: bool,
    body: Vec<u8>,
}

/// Sends one HTTP/1.1 request on a keep-alive connection and reads the whole response.
fn exchange(
    connection: &mut BufReader<TcpStream>,
    method: &str,
    path: &str,
    body: &str,
) -> std::io::Result<Response> {
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let stream = connection.get_mut();
    stream.write_all(head.as_bytes())?;
    // A server refusing an oversized body may answer and close before reading it all.
    if let Err(e) = stream.write_all(body.as_bytes()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe
            && e.kind() != std::io::ErrorKind::ConnectionReset
        {
            return Err(e);
        }
    }
    let mut status_line = String::new();
    connection.read_line(&mut status_line)?;
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line {status_line:?}")))?;
    let mut content_length = 0usize;
    let mut retry_after = None;
    let mut closes = false;
    loop {
        let mut line = String::new();
        if connection.read_line(&mut line)? == 0 {
            return Err(std::io::Error::other("connection closed inside headers"));
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                content_length = value.trim().parse().map_err(std::io::Error::other)?;
            } else if name.eq_ignore_ascii_case("retry-after") {
                retry_after = value.trim().parse().ok().map(Duration::from_secs);
            } else if name.eq_ignore_ascii_case("connection") {
                closes = value.trim().eq_ignore_ascii_case("close");
            }
        }
    }
    let mut response_body = vec![0; content_length];
    connection.read_exact(&mut response_body)?;
    Ok(Response {
        status,
        retry_after,
        closes,
        body: response_body,
    })
}

/// Mean batch size per queue, from the server's own `/metrics`.
fn mean_batch_sizes(addr: SocketAddr) -> std::io::Result<Vec<(String, f64)>> {
    let body = exchange(&mut connect(addr)?, "GET", "/metrics", "")?.body;
    let text = String::from_utf8_lossy(&body);
    let value = |name: &str, queue: &str| {
        let prefix = format!("{name}{{queue=\"{queue}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .and_then(|v| v.trim().parse::<f64>().ok())
    };
    Ok(["rerank", "ask"]
        .into_iter()
        .filter_map(|queue| {
            let sum = value("ansel_batch_size_sum", queue)?;
            let count = value("ansel_batch_size_count", queue)?;
            Some((queue.to_string(), sum / count))
        })
        .collect())
}

impl LoadReport {
    /// The report as Markdown, with the command that produced it.
    pub fn markdown(&self, plan: &LoadPlan, command: &str) -> String {
        let mut out = String::from("# Server load test\n\n");
        out.push_str(&format!(
            "Produced by `{command}` on loopback: {} requests per endpoint (stopping early after {} s), \
             {} keep-alive connections, {} `/rerank` texts per request, questions cycled from the sample set. \
             The machine has {} cores, shared by the server, this load generator and whatever else runs there \
             (nothing was stopped for the test), so the numbers move with the machine's load.\n\n",
            plan.requests,
            plan.max_duration.as_secs(),
            plan.concurrency,
            plan.texts.len(),
            std::thread::available_parallelism().map_or(0, |n| n.get()),
        ));
        if let Some(models) = &self.served_by {
            out.push_str(&format!(
                "The server ranked with its {models} (its `/health`).\n\n"
            ));
        }
        out.push_str(
            "A client told 503 waits its `Retry-After` before sending again. Latencies are those of the \
             requests answered 200; 200 OK/s is the goodput.\n\n",
        );
        out.push_str("| endpoint | requests | 200 OK | 503 shed | p50 ms | p99 ms | max ms | 200 OK/s |\n|---|---|---|---|---|---|---|---|\n");
        for e in &self.endpoints {
            out.push_str(&format!(
                "| `{}` | {} | {} | {} | {:.2} | {:.2} | {:.2} | {:.1} |\n",
                e.endpoint, e.requests, e.ok, e.shed, e.p50_ms, e.p99_ms, e.max_ms, e.ok_per_s
            ));
        }
        let batches: Vec<String> = self
            .mean_batch_sizes
            .iter()
            .map(|(queue, mean)| format!("`{queue}` {mean:.2}"))
            .collect();
        out.push_str(&format!(
            "\nMean requests per scored batch (server's `/metrics`, whole run): {}.\n",
            batches.join(", ")
        ));
        out.push_str("\n## Bad requests\n\n| request | expected | got |\n|---|---|---|\n");
        for a in &self.abuse {
            let got = a.got.map_or("no response".to_string(), |s| s.to_string());
            out.push_str(&format!("| {} | {} | {} |\n", a.name, a.expected, got));
        }
        out.push_str(&format!(
            "\n`/health` after the test: {}.\n",
            if self.healthy_after {
                "200 OK"
            } else {
                "FAILED"
            }
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_nearest_rank() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&values, 0.5), 50.0);
        assert_eq!(percentile(&values, 0.99), 99.0);
        assert_eq!(percentile(&[7.0], 0.99), 7.0);
        assert!(percentile(&[], 0.5).is_nan());
    }

    #[test]
    fn only_loopback_is_a_target() {
        let plan = LoadPlan {
            addr: "192.0.2.1:80".parse().unwrap(),
            requests: 1,
            concurrency: 1,
            max_duration: Duration::from_secs(1),
            questions: vec!["q".into()],
            texts: vec![],
        };
        let err = run(&plan, 10).unwrap_err().to_string();
        assert!(err.contains("not a loopback address"), "{err}");
    }
}
