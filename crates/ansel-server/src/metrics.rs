//! Counters and histograms, rendered in the Prometheus text format.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

const LATENCY_BUCKETS_S: [f64; 11] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];
const BATCH_BUCKETS: [f64; 7] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];

#[derive(Default)]
struct Histogram {
    /// Observations at or below each bucket bound (not yet cumulative).
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, bounds: &[f64], value: f64) {
        self.counts.resize(bounds.len(), 0);
        if let Some(i) = bounds.iter().position(|&b| value <= b) {
            self.counts[i] += 1;
        }
        self.sum += value;
        self.count += 1;
    }

    fn render(&self, out: &mut String, name: &str, labels: &str, bounds: &[f64]) {
        let sep = if labels.is_empty() { "" } else { "," };
        let mut cumulative = 0;
        for (i, bound) in bounds.iter().enumerate() {
            cumulative += self.counts.get(i).copied().unwrap_or(0);
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {cumulative}"
            );
        }
        let _ = writeln!(
            out,
            "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}",
            self.count
        );
        let braces = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{labels}}}")
        };
        let _ = writeln!(out, "{name}_sum{braces} {}", self.sum);
        let _ = writeln!(out, "{name}_count{braces} {}", self.count);
    }
}

#[derive(Default)]
struct Inner {
    requests: BTreeMap<(&'static str, u16), u64>,
    latency: BTreeMap<&'static str, Histogram>,
    batch_sizes: BTreeMap<&'static str, Histogram>,
}

/// What the server counts. Endpoint and queue names are fixed strings.
#[derive(Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
}

impl Metrics {
    /// Records one finished request.
    pub fn request(&self, endpoint: &'static str, status: u16, elapsed: Duration) {
        let mut inner = self.lock();
        *inner.requests.entry((endpoint, status)).or_default() += 1;
        inner
            .latency
            .entry(endpoint)
            .or_default()
            .observe(&LATENCY_BUCKETS_S, elapsed.as_secs_f64());
    }

    /// Records the size of one batch a worker scored.
    pub fn batch(&self, queue: &'static str, size: usize) {
        self.lock()
            .batch_sizes
            .entry(queue)
            .or_default()
            .observe(&BATCH_BUCKETS, size as f64);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic elsewhere while holding the lock leaves counts that are still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The Prometheus text exposition of every metric, plus `gauges`.
    pub fn render(&self, gauges: &[(&str, &str, f64)]) -> String {
        let inner = self.lock();
        let mut out = String::new();
        out.push_str("# HELP ansel_requests_total HTTP requests by endpoint and status.\n");
        out.push_str("# TYPE ansel_requests_total counter\n");
        for ((endpoint, status), n) in &inner.requests {
            let _ = writeln!(
                out,
                "ansel_requests_total{{endpoint=\"{endpoint}\",status=\"{status}\"}} {n}"
            );
        }
        out.push_str("# HELP ansel_request_duration_seconds Time to answer a request.\n");
        out.push_str("# TYPE ansel_request_duration_seconds histogram\n");
        for (endpoint, h) in &inner.latency {
            let labels = format!("endpoint=\"{endpoint}\"");
            h.render(
                &mut out,
                "ansel_request_duration_seconds",
                &labels,
                &LATENCY_BUCKETS_S,
            );
        }
        out.push_str("# HELP ansel_batch_size Requests scored together by a worker.\n");
        out.push_str("# TYPE ansel_batch_size histogram\n");
        for (queue, h) in &inner.batch_sizes {
            let labels = format!("queue=\"{queue}\"");
            h.render(&mut out, "ansel_batch_size", &labels, &BATCH_BUCKETS);
        }
        for (name, help, value) in gauges {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_are_cumulative_and_counters_labelled() {
        let m = Metrics::default();
        m.request("/rerank", 200, Duration::from_millis(3));
        m.request("/rerank", 200, Duration::from_millis(40));
        m.request("/rerank", 413, Duration::from_secs(9));
        m.batch("rerank", 3);
        let text = m.render(&[("ansel_index_sentences", "Sentences.", 12.0)]);
        for line in [
            "ansel_requests_total{endpoint=\"/rerank\",status=\"200\"} 2",
            "ansel_requests_total{endpoint=\"/rerank\",status=\"413\"} 1",
            "ansel_request_duration_seconds_bucket{endpoint=\"/rerank\",le=\"0.005\"} 1",
            "ansel_request_duration_seconds_bucket{endpoint=\"/rerank\",le=\"0.05\"} 2",
            "ansel_request_duration_seconds_bucket{endpoint=\"/rerank\",le=\"2.5\"} 2",
            "ansel_request_duration_seconds_bucket{endpoint=\"/rerank\",le=\"+Inf\"} 3",
            "ansel_request_duration_seconds_count{endpoint=\"/rerank\"} 3",
            "ansel_batch_size_bucket{queue=\"rerank\",le=\"2\"} 0",
            "ansel_batch_size_bucket{queue=\"rerank\",le=\"4\"} 1",
            "# TYPE ansel_index_sentences gauge",
            "ansel_index_sentences 12",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
    }
}
