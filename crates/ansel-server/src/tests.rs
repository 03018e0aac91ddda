use super::*;
use ansel_answer::Cascade;
use ansel_index::{Document, SentenceIndex};
use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use tower::ServiceExt;

fn test_state(dir: &std::path::Path, limits: Limits) -> Arc<AppState> {
    let wo_rr = ansel_lexical::from_spec("wo-rr", &[]).unwrap().unwrap();
    state_with_reranker(dir, limits, wo_rr)
}

fn state_with_reranker(
    dir: &std::path::Path,
    limits: Limits,
    rerank: Box<dyn ansel_model::Ranker>,
) -> Arc<AppState> {
    AppState::new(bee_answerer(dir, rerank), limits)
}

/// An answerer over a one-document index about bees.
fn bee_answerer(dir: &std::path::Path, rerank: Box<dyn ansel_model::Ranker>) -> Answerer {
    let index = SentenceIndex::open_or_create(dir).unwrap();
    let mut writer = index.writer().unwrap();
    writer
        .add(&Document {
            id: "bees.md".into(),
            title: "Honey bees".into(),
            text: "Honey bees live in hives. A worker bee lives about six weeks in summer. \
                   The queen can live for several years."
                .into(),
        })
        .unwrap();
    writer.commit().unwrap();
    index.reload().unwrap();
    Answerer {
        retriever: Box::new(ansel_answer::IndexRetriever::bm25(std::sync::Arc::new(
            index,
        ))),
        cascade: Cascade {
            retrieve: 10,
            prune: None,
            rerank,
            rerank_chunk: 8,
        },
        reader: None,
    }
}

async fn call(state: &Arc<AppState>, method: &str, uri: &str, body: &str) -> (StatusCode, String) {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header("host", "localhost")
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let response = app(state.clone()).oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[tokio::test]
async fn rerank_is_tei_compatible() {
    let dir = tempfile::tempdir().unwrap();
    let state = test_state(dir.path(), Limits::default());
    let body = r#"{"query": "How long does a worker bee live?",
                   "texts": ["Paris is in France.", "A worker bee lives six weeks.", "Bees live in hives."],
                   "return_text": true}"#;
    let (status, text) = call(&state, "POST", "/rerank", body).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let ranks = json(&text);
    let order: Vec<u64> = ranks
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["index"].as_u64().unwrap())
        .collect();
    assert_eq!(order, vec![1, 2, 0]);
    assert_eq!(ranks[0]["text"], "A worker bee lives six weeks.");
    let top = ranks[0]["score"].as_f64().unwrap();
    assert!(top > 0.5 && top < 1.0, "logistic score in (0, 1): {top}");

    let raw =
        r#"{"query": "worker bee live", "texts": ["worker bee lives", "x"], "raw_scores": true}"#;
    let (status, text) = call(&state, "POST", "/rerank", raw).await;
    assert_eq!(status, StatusCode::OK);
    let ranks = json(&text);
    assert_eq!(
        ranks[0]["score"].as_f64().unwrap(),
        2.0,
        "wo counts worker, bee"
    );
    assert!(ranks[0].get("text").is_none());
}

#[tokio::test]
async fn limits_and_bad_input_get_json_errors() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_texts: 3,
        max_body_bytes: 400,
        max_words_per_text: 4,
        ..Limits::default()
    };
    let state = test_state(dir.path(), limits);
    let cases = [
        (
            r#"{"query": "q", "texts": ["a", "b", "c", "d"]}"#,
            413,
            "more than the limit of 3",
        ),
        (
            &format!(r#"{{"query": "q", "texts": ["{}"]}}"#, "a".repeat(500)),
            413,
            "larger than 400 bytes",
        ),
        (
            r#"{"query": "q", "texts": ["one two three four five"]}"#,
            413,
            "`texts[0]` has more than 4 words",
        ),
        (r#"{"query": "q", "texts": ["a"#, 400, "invalid JSON body"),
        (r#"{"query": "q"}"#, 422, "missing field `texts`"),
        (
            r#"{"query": "q", "texts": ["a", 2]}"#,
            422,
            "field `texts[1]`: invalid type: integer `2`, expected a string",
        ),
        (
            r#"{"query": "q", "texts": ["a"], "raw_scores": "yes"}"#,
            422,
            "field `raw_scores`: invalid type: string",
        ),
        (r#"["q", ["a"]]"#, 422, "expected a JSON object"),
        (r#"{"query": "q", "texts": []}"#, 422, "`texts` is empty"),
        (r#"{"query": " ", "texts": ["a"]}"#, 422, "`query` is empty"),
    ];
    for (body, status, message) in cases {
        let (got, text) = call(&state, "POST", "/rerank", body).await;
        assert_eq!(got.as_u16(), status, "{body}: {text}");
        let error = json(&text);
        assert!(error["error"].as_str().unwrap().contains(message), "{text}");
        assert_eq!(error["error_type"], "Validation");
    }
    let truncated = r#"{"query": "q", "texts": ["one two three four five"], "truncate": true, "return_text": true}"#;
    let (status, text) = call(&state, "POST", "/rerank", truncated).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_eq!(
        json(&text)[0]["text"],
        "one two three four five",
        "text as sent"
    );

    for (body, message) in [
        (
            r#"{"question": "bees", "top_k": 0}"#,
            "`top_k` must be between 1 and 50",
        ),
        (r#"{"question": "bees", "k": 2}"#, "unknown field `k`"),
        (
            r#"{"question": "bees", "top_k": "three"}"#,
            "field `top_k`: invalid type: string",
        ),
        (r#"{"question": ""}"#, "`question` is empty"),
    ] {
        let (status, text) = call(&state, "POST", "/ask", body).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {text}");
        assert!(text.contains(message), "{text}");
    }
    // Still serving after all that.
    let (status, _) = call(&state, "GET", "/health", "").await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn ask_takes_a_retriever_and_refuses_one_the_index_cannot_serve() {
    let dir = tempfile::tempdir().unwrap();
    let state = test_state(dir.path(), Limits::default());
    let (status, text) = call(
        &state,
        "POST",
        "/ask",
        r#"{"question": "How long does a worker bee live?", "retriever": "bm25"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_eq!(json(&text)["retriever"], "bm25");
    for retriever in ["dense", "hybrid"] {
        let body =
            format!(r#"{{"question": "How long does a bee live?", "retriever": "{retriever}"}}"#);
        let (status, text) = call(&state, "POST", "/ask", &body).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{text}");
        assert!(
            text.contains("`retriever`") && text.contains("this index has no dense vectors"),
            "{text}"
        );
        let path = dir.path().display().to_string();
        assert!(!text.contains(&path), "the server's path leaks: {text}");
    }
    let (status, text) = call(
        &state,
        "POST",
        "/ask",
        r#"{"question": "How long does a bee live?", "retriever": "magic"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{text}");
    assert!(text.contains("retriever"), "{text}");
    let (_, text) = call(&state, "GET", "/health", "").await;
    let health = json(&text);
    assert_eq!(health["retriever"], "bm25");
    assert_eq!(health["retrievers"], serde_json::json!(["bm25"]));
}

#[tokio::test]
async fn ask_answers_with_context_and_metrics_count_it() {
    let dir = tempfile::tempdir().unwrap();
    let state = test_state(dir.path(), Limits::default());
    let (status, text) = call(
        &state,
        "POST",
        "/ask",
        r#"{"question": "How long does a worker bee live?", "top_k": 2}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let answers = json(&text);
    let top = &answers["answers"][0];
    assert_eq!(top["text"], "A worker bee lives about six weeks in summer.");
    assert_eq!(top["title"], "Honey bees");
    assert_eq!(top["doc_id"], "bees.md");
    assert_eq!(top["position"], 1);
    assert_eq!(top["prev"], "Honey bees live in hives.");
    assert_eq!(top["next"], "The queen can live for several years.");
    assert_eq!(top["stage"], "rerank");
    assert_eq!(answers["answers"].as_array().unwrap().len(), 2);

    let (status, text) = call(&state, "GET", "/health", "").await;
    assert_eq!(status, StatusCode::OK);
    let health = json(&text);
    assert_eq!(
        (health["documents"].as_u64(), health["sentences"].as_u64()),
        (Some(1), Some(3))
    );
    assert_eq!(health["rerank_model"], "wo-rr");

    let (status, text) = call(&state, "GET", "/metrics", "").await;
    assert_eq!(status, StatusCode::OK);
    for line in [
        "ansel_requests_total{endpoint=\"/ask\",status=\"200\"} 1",
        "ansel_requests_total{endpoint=\"/health\",status=\"200\"} 1",
        "ansel_batch_size_count{queue=\"ask\"} 1",
        "ansel_index_sentences 3",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in\n{text}"
        );
    }
}

#[tokio::test]
async fn the_page_posts_to_ask() {
    let dir = tempfile::tempdir().unwrap();
    let state = test_state(dir.path(), Limits::default());
    let (status, html) = call(&state, "GET", "/", "").await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("<form id=\"ask-form\">"));
    assert!(html.contains("fetch(\"/ask\""));
}

#[test]
fn truncation_keeps_the_requested_end() {
    assert_eq!(
        fit_words("a b c d", 2, true, TruncationDirection::Right).as_deref(),
        Some("a b")
    );
    assert_eq!(
        fit_words("a b c d", 2, true, TruncationDirection::Left).as_deref(),
        Some("c d")
    );
    assert_eq!(
        fit_words("a b c d", 2, false, TruncationDirection::Right),
        None
    );
    assert_eq!(
        fit_words("a  b", 2, false, TruncationDirection::Right).as_deref(),
        Some("a  b")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bounded_load_test_over_tcp_passes_and_shutdown_is_graceful() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_body_bytes: 4096,
        ..Limits::default()
    };
    let state = test_state(dir.path(), limits);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(listener, state, ConnectionLimits::default(), async {
        let _ = stopped.await;
    }));
    let plan = loadtest::LoadPlan {
        addr,
        requests: 40,
        concurrency: 4,
        max_duration: std::time::Duration::from_secs(20),
        questions: vec!["How long does a worker bee live?".into(), "queen".into()],
        texts: vec![
            "A worker bee lives six weeks.".into(),
            "Queens live for years.".into(),
        ],
    };
    let report = tokio::task::spawn_blocking(move || loadtest::run(&plan, 4096))
        .await
        .unwrap()
        .unwrap();
    assert!(report.passed(), "{report:#?}");
    assert_eq!(report.endpoints[0].requests, 40);
    // The report names the models it measured (from the server's /health).
    assert_eq!(
        report.served_by.as_deref(),
        Some("rerank model `wo-rr`, prune model `none`")
    );
    let queues: Vec<&str> = report
        .mean_batch_sizes
        .iter()
        .map(|(q, _)| q.as_str())
        .collect();
    assert_eq!(queues, vec!["rerank", "ask"]);
    assert!(report.mean_batch_sizes.iter().all(|(_, mean)| *mean >= 1.0));
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}

/// A reranker that holds every batch until the test opens its gate.
struct GatedRanker {
    gate: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
}

impl ansel_model::Ranker for GatedRanker {
    fn name(&self) -> &str {
        "gated"
    }

    fn score(&self, question: &Question) -> ansel_model::Result<Vec<f32>> {
        let _ = self.gate.lock().unwrap().recv();
        Ok(vec![0.0; question.candidates.len()])
    }
}

/// A server whose worker scores one request at a time and lets one wait, its model blocked until
/// the returned sender sends or is dropped; requests are due `timeout` after arrival.
fn gated_state(
    dir: &std::path::Path,
    timeout: std::time::Duration,
) -> (std::sync::mpsc::Sender<()>, Arc<AppState>) {
    let (open, gate) = std::sync::mpsc::channel();
    let limits = Limits {
        timeout,
        max_batch: 1,
        queue_len: 1,
        ..Limits::default()
    };
    let rerank = Box::new(GatedRanker {
        gate: std::sync::Mutex::new(gate),
    });
    (open, state_with_reranker(dir, limits, rerank))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_worker_gets_503s_for_time_and_queue_limits_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let (open, state) = gated_state(dir.path(), std::time::Duration::from_millis(50));
    let body = r#"{"query": "bees", "texts": ["bees"]}"#;
    // The worker takes this one and blocks in the model: no answer in time.
    let (status, text) = call(&state, "POST", "/rerank", body).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{text}");
    assert!(
        text.contains("no answer before the request's deadline"),
        "{text}"
    );
    // One request may wait in the queue; the next is refused at once.
    let waiting = tokio::spawn({
        let state = state.clone();
        async move { call(&state, "POST", "/rerank", body).await }
    });
    let mut refused = None;
    for _ in 0..100 {
        let (status, text) = call(&state, "POST", "/rerank", body).await;
        if text.contains("too many requests waiting") {
            refused = Some(status);
            break;
        }
    }
    assert_eq!(refused, Some(StatusCode::SERVICE_UNAVAILABLE));
    assert_eq!(waiting.await.unwrap().0, StatusCode::SERVICE_UNAVAILABLE);
    // Open the gate for good: the worker drains what timed out and serves again
    // (a request sent before the queue has drained may still be refused).
    drop(open);
    let mut last = (StatusCode::SERVICE_UNAVAILABLE, String::new());
    for _ in 0..100 {
        last = call(&state, "POST", "/rerank", body).await;
        if last.0 == StatusCode::OK {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(last.0, StatusCode::OK, "{}", last.1);
}

/// Fails like a model that cannot read some inputs: questions containing "odd" are unsupported.
struct PickyRanker;

impl ansel_model::Ranker for PickyRanker {
    fn name(&self) -> &str {
        "picky"
    }

    fn score(&self, question: &Question) -> ansel_model::Result<Vec<f32>> {
        if question.text.contains("odd") {
            return Err(ModelError::Unsupported {
                model: "picky".into(),
                message: "cannot score odd questions".into(),
            });
        }
        Ok((0..question.candidates.len()).map(|i| i as f32).collect())
    }
}

#[tokio::test]
async fn a_model_that_cannot_score_the_input_gets_422_and_others_in_the_batch_still_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let state = state_with_reranker(dir.path(), Limits::default(), Box::new(PickyRanker));
    let odd = r#"{"query": "an odd question", "texts": ["a", "b"]}"#;
    let fine = r#"{"query": "a fine question", "texts": ["a", "b"]}"#;
    let (odd_reply, fine_reply) = tokio::join!(
        call(&state, "POST", "/rerank", odd),
        call(&state, "POST", "/rerank", fine)
    );
    assert_eq!(
        odd_reply.0,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        odd_reply.1
    );
    assert_eq!(json(&odd_reply.1)["error_type"], "Unsupported");
    assert!(odd_reply.1.contains("cannot score odd questions"));
    assert_eq!(fine_reply.0, StatusCode::OK, "{}", fine_reply.1);
    assert_eq!(json(&fine_reply.1)[0]["index"], 1);
}

fn secured_state(dir: &std::path::Path, security: Security) -> Arc<AppState> {
    let wo_rr = ansel_lexical::from_spec("wo-rr", &[]).unwrap().unwrap();
    AppState::secured(bee_answerer(dir, wo_rr), Limits::default(), security)
}

async fn send(state: &Arc<AppState>, request: Request<Body>) -> (StatusCode, String) {
    let response = app(state.clone()).oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

#[tokio::test]
async fn the_api_key_host_list_and_json_content_type_are_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let security = Security {
        api_key: Some("s3cret".into()),
        allowed_hosts: Security::hosts_for("127.0.0.1".parse().unwrap(), &[]),
        cors_origin: None,
    };
    let state = secured_state(dir.path(), security);
    let body = r#"{"query": "bees", "texts": ["bees live in hives"]}"#;
    let post = |host: &str, key: Option<&str>, content_type: &str, body: &str| {
        let mut request = Request::builder()
            .method("POST")
            .uri("/rerank")
            .header("host", host)
            .header("content-type", content_type);
        if let Some(key) = key {
            request = request.header("authorization", format!("Bearer {key}"));
        }
        request.body(Body::from(body.to_string())).unwrap()
    };
    let (status, text) = send(
        &state,
        post("localhost:8080", Some("s3cret"), "application/json", body),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let (status, text) = send(
        &state,
        post("localhost:8080", None, "application/json", body),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{text}");
    assert_eq!(json(&text)["error_type"], "Unauthorized");
    let (status, _) = send(
        &state,
        post("localhost", Some("wrong!"), "application/json", body),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // The scheme is case-insensitive.
    let mut lower = post("localhost", None, "application/json", body);
    lower
        .headers_mut()
        .insert("authorization", "bearer s3cret".parse().unwrap());
    let (status, text) = send(&state, lower).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    // HTTP/1.1 needs exactly one Host: none, or two, is a bad request.
    let mut no_host = post("localhost", Some("s3cret"), "application/json", body);
    no_host.headers_mut().remove("host");
    assert_eq!(send(&state, no_host).await.0, StatusCode::BAD_REQUEST);
    let mut two_hosts = post("localhost", Some("s3cret"), "application/json", body);
    two_hosts
        .headers_mut()
        .append("host", "evil.example".parse().unwrap());
    assert_eq!(send(&state, two_hosts).await.0, StatusCode::BAD_REQUEST);
    // A DNS-rebinding page reaches the server under its own name.
    let (status, text) = send(
        &state,
        post(
            "evil.example:8080",
            Some("s3cret"),
            "application/json",
            body,
        ),
    )
    .await;
    assert_eq!(status, StatusCode::MISDIRECTED_REQUEST, "{text}");
    // A cross-site form or fetch without a preflight can only send text/plain.
    let (status, text) = send(
        &state,
        post("127.0.0.1", Some("s3cret"), "text/plain", body),
    )
    .await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{text}");
    let unknown = r#"{"query": "bees", "texts": ["bees"], "colour": "red"}"#;
    let (status, text) = send(
        &state,
        post("127.0.0.1", Some("s3cret"), "application/json", unknown),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{text}");
    assert!(text.contains("colour"), "{text}");
    // /health stays open for load balancers; /metrics does not.
    let get = |uri: &str| {
        Request::builder()
            .uri(uri)
            .header("host", "localhost")
            .body(Body::empty())
            .unwrap()
    };
    assert_eq!(send(&state, get("/health")).await.0, StatusCode::OK);
    assert_eq!(
        send(&state, get("/metrics")).await.0,
        StatusCode::UNAUTHORIZED
    );
}

/// Serves `state` on a free loopback port until the returned sender fires.
async fn serve_on_loopback(
    state: Arc<AppState>,
    limits: ConnectionLimits,
) -> (
    std::net::SocketAddr,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(listener, state, limits, async {
        let _ = stopped.await;
    }));
    (addr, stop, server)
}

/// Reads what the server sends until it closes the connection (or 5 s pass).
async fn read_to_close(stream: &mut tokio::net::TcpStream) -> String {
    use tokio::io::AsyncReadExt;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        stream.read_to_end(&mut out),
    )
    .await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_idle_clients_are_cut_off_and_connections_beyond_the_cap_get_503() {
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpStream;
    let dir = tempfile::tempdir().unwrap();
    let state = test_state(dir.path(), Limits::default());
    let limits = ConnectionLimits {
        header_timeout: std::time::Duration::from_millis(300),
        max_connections: 3,
        grace: std::time::Duration::from_millis(200),
        ..ConnectionLimits::default()
    };
    let (addr, stop, server) = serve_on_loopback(state, limits).await;
    let started = std::time::Instant::now();
    // Two clients that never finish their request head, one that never sends anything.
    let mut slow = Vec::new();
    for _ in 0..2 {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(b"GET /health HTTP/1.1\r\nHost: loc")
            .await
            .unwrap();
        slow.push(stream);
    }
    let mut idle = TcpStream::connect(addr).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    // The cap is reached: the next connection is told so at once.
    let mut refused = TcpStream::connect(addr).await.unwrap();
    let answer = read_to_close(&mut refused).await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("Retry-After: 1"), "{answer}");
    // The header timeout closes all three.
    for stream in slow.iter_mut().chain([&mut idle]) {
        read_to_close(stream).await;
    }
    let cut_after = started.elapsed();
    assert!(
        cut_after < std::time::Duration::from_secs(3),
        "{cut_after:?}"
    );
    // Their slots are free again: a new client is served.
    let mut fresh = TcpStream::connect(addr).await.unwrap();
    fresh
        .write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let answer = read_to_close(&mut fresh).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_finishes_within_the_grace_period_despite_a_stalled_client() {
    use tokio::io::AsyncWriteExt;
    let dir = tempfile::tempdir().unwrap();
    let state = test_state(dir.path(), Limits::default());
    let limits = ConnectionLimits {
        grace: std::time::Duration::from_millis(300),
        ..ConnectionLimits::default()
    };
    let (addr, stop, server) = serve_on_loopback(state, limits).await;
    // A body promised and never sent: the request is in flight until its body timeout (10 s).
    let mut stalled = tokio::net::TcpStream::connect(addr).await.unwrap();
    stalled
        .write_all(
            b"POST /rerank HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
              Content-Length: 100\r\n\r\n{\"query\":",
        )
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let asked = std::time::Instant::now();
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
    let took = asked.elapsed();
    assert!(
        took >= std::time::Duration::from_millis(250) && took < std::time::Duration::from_secs(2),
        "shutdown took {took:?}"
    );
}

#[tokio::test]
async fn cohere_routes_rank_like_rerank_and_honour_top_n_documents_and_model_names() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        served_models: vec!["ansel-default".into()],
        ..Limits::default()
    };
    let state = test_state(dir.path(), limits);
    let texts = [
        "Grass is green.",
        "A worker bee lives about six weeks in summer.",
        "Bees live in hives.",
    ];
    let tei = format!(
        r#"{{"query": "How long does a worker bee live?", "texts": {}}}"#,
        serde_json::to_string(&texts).unwrap()
    );
    let (status, text) = call(&state, "POST", "/rerank", &tei).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let tei = json(&text);
    let v2 = format!(
        r#"{{"model": "ansel-default", "query": "How long does a worker bee live?", "documents": {}, "top_n": 2}}"#,
        serde_json::to_string(&texts).unwrap()
    );
    let (status, text) = call(&state, "POST", "/v2/rerank", &v2).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let v2 = json(&text);
    let results = v2["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "top_n");
    assert_eq!(results[0]["index"], 1);
    // The same pair gets the same number on every route.
    assert_eq!(results[0]["relevance_score"], tei[0]["score"]);
    assert!(results[0].get("document").is_none());
    assert_eq!(v2["meta"]["api_version"]["version"], "2");
    assert_eq!(v2["model"], "ansel-default");
    assert!(!v2["id"].as_str().unwrap().is_empty());

    // v1 (and Jina): document objects, documents returned.
    let v1 = r#"{"query": "Where do bees live?", "documents": [{"text": "Grass is green."}, {"text": "Bees live in hives.", "title": "Bees"}], "return_documents": true}"#;
    let (status, text) = call(&state, "POST", "/v1/rerank", v1).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let v1 = json(&text);
    assert_eq!(v1["results"][0]["index"], 1);
    assert_eq!(v1["results"][0]["document"]["text"], "Bees live in hives.");
    assert_eq!(v1["results"].as_array().unwrap().len(), 2);

    for (body, status, needle) in [
        (
            r#"{"model": "gpt-5", "query": "q", "documents": ["a"]}"#,
            StatusCode::NOT_FOUND,
            "model `gpt-5` is not served here; served: ansel-default",
        ),
        (
            r#"{"query": "q", "documents": [{"title": "no text"}]}"#,
            StatusCode::UNPROCESSABLE_ENTITY,
            "documents[0]",
        ),
        (
            r#"{"query": "q", "documents": ["a"], "top_n": 0}"#,
            StatusCode::UNPROCESSABLE_ENTITY,
            "top_n",
        ),
        (
            r#"{"query": "q", "documents": ["a"], "rank_fields": ["x"]}"#,
            StatusCode::UNPROCESSABLE_ENTITY,
            "rank_fields",
        ),
    ] {
        let (got, text) = call(&state, "POST", "/v2/rerank", body).await;
        assert_eq!(got, status, "{body}: {text}");
        assert!(text.contains(needle), "{body}: {text}");
    }
    // Long documents are cut, not refused.
    let long = format!(
        r#"{{"query": "bees", "documents": ["{}"], "max_tokens_per_doc": 8}}"#,
        "bees ".repeat(2000)
    );
    assert_eq!(
        call(&state, "POST", "/v2/rerank", &long).await.0,
        StatusCode::OK
    );

    let (status, text) = call(&state, "GET", "/info", "").await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let info = json(&text);
    assert_eq!(info["model_id"], "wo-rr");
    assert_eq!(info["max_client_batch_size"], 256);
}

/// A reranker with a tokenizer: one token per word (id = its length), `[CLS]` 101 and `[SEP]` 102.
struct Tokenizing;

impl ansel_model::Ranker for Tokenizing {
    fn name(&self) -> &str {
        "tokenizing"
    }

    fn score(&self, question: &Question) -> ansel_model::Result<Vec<f32>> {
        Ok(vec![0.0; question.candidates.len()])
    }

    fn tokenize(
        &self,
        text: &str,
        pair: Option<&str>,
        special: bool,
    ) -> Option<ansel_model::Result<Vec<ansel_model::Token>>> {
        let mark = |id: u32, text: &str| ansel_model::Token {
            id,
            text: text.into(),
            special: true,
            start: None,
            stop: None,
        };
        let words = |text: &str| -> Vec<ansel_model::Token> {
            let mut at = 0;
            text.split(' ')
                .map(|w| {
                    let start = at;
                    at += w.len() + 1;
                    ansel_model::Token {
                        id: w.len() as u32,
                        text: w.into(),
                        special: false,
                        start: Some(start),
                        stop: Some(start + w.len()),
                    }
                })
                .collect()
        };
        let mut tokens = Vec::new();
        tokens.extend(special.then(|| mark(101, "[CLS]")));
        tokens.extend(words(text));
        if let Some(pair) = pair {
            tokens.extend(special.then(|| mark(102, "[SEP]")));
            tokens.extend(words(pair));
        }
        tokens.extend(special.then(|| mark(102, "[SEP]")));
        Some(Ok(tokens))
    }
}

#[tokio::test]
async fn tokenize_is_tei_compatible_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_texts: 3,
        max_words_per_text: 4,
        max_request_words: 6,
        ..Limits::default()
    };
    let state = state_with_reranker(dir.path(), limits, Box::new(Tokenizing));
    let (status, text) = call(&state, "POST", "/tokenize", r#"{"inputs": "a bee"}"#).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_eq!(
        json(&text),
        serde_json::json!([[
            {"id": 101, "text": "[CLS]", "special": true, "start": null, "stop": null},
            {"id": 1, "text": "a", "special": false, "start": 0, "stop": 1},
            {"id": 3, "text": "bee", "special": false, "start": 2, "stop": 5},
            {"id": 102, "text": "[SEP]", "special": true, "start": null, "stop": null},
        ]])
    );
    let body = r#"{"inputs": ["hives", ["who", "a bee"]], "add_special_tokens": false}"#;
    let (status, text) = call(&state, "POST", "/tokenize", body).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let ids: Vec<Vec<u64>> = json(&text)
        .as_array()
        .unwrap()
        .iter()
        .map(|input| {
            input
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["id"].as_u64().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(ids, vec![vec![5], vec![3, 1, 3]]);
    let cases = [
        (r#"{"inputs": []}"#, 422, "`inputs` is empty"),
        (
            r#"{"inputs": ["a", "b", "c", "d"]}"#,
            413,
            "more than the limit of 3",
        ),
        (r#"{"inputs": "a b c d e"}"#, 413, "`inputs[0]` has 5 words"),
        (
            r#"{"inputs": [["a b c", "d e f g"]]}"#,
            413,
            "more than 6 words",
        ),
        (r#"{"inputs": [["a"]]}"#, 422, "inputs"),
        (r#"{"inputs": "a", "truncate": true}"#, 422, "truncate"),
    ];
    for (body, want, message) in cases {
        let (status, text) = call(&state, "POST", "/tokenize", body).await;
        assert_eq!(status.as_u16(), want, "{body}: {text}");
        assert!(
            json(&text)["error"].as_str().unwrap().contains(message),
            "{body}: {text}"
        );
    }
    // A lexical model reads words, not tokens: a clear 422.
    let lexical = test_state(dir.path().join("lexical").as_path(), Limits::default());
    let (status, text) = call(&lexical, "POST", "/tokenize", r#"{"inputs": "a bee"}"#).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{text}");
    assert!(text.contains("`wo-rr` is lexical"), "{text}");
}

#[tokio::test]
async fn openapi_json_documents_every_route_with_its_types() {
    let dir = tempfile::tempdir().unwrap();
    let state = test_state(dir.path(), Limits::default());
    let (status, text) = call(&state, "GET", "/openapi.json", "").await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let doc = json(&text);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"), "{doc}");
    for (path, method) in [
        ("/rerank", "post"),
        ("/v1/rerank", "post"),
        ("/v2/rerank", "post"),
        ("/ask", "post"),
        ("/info", "get"),
        ("/tokenize", "post"),
        ("/health", "get"),
        ("/metrics", "get"),
        ("/openapi.json", "get"),
    ] {
        let operation = &doc["paths"][path][method];
        assert!(operation.is_object(), "{method} {path} is documented");
        assert!(operation["responses"]["200"].is_object(), "{method} {path}");
        assert!(
            operation["responses"]["503"].is_object(),
            "{method} {path} documents the guard's errors"
        );
    }
    let schemas = &doc["components"]["schemas"];
    for schema in [
        "RerankRequest",
        "CohereRequest",
        "TokenizeRequest",
        "SimpleToken",
        "Info",
    ] {
        assert!(schemas[schema].is_object(), "schema {schema}");
    }
    // The request schemas are the types the handlers read: unknown fields are refused there too.
    assert_eq!(schemas["RerankRequest"]["additionalProperties"], false);
    let required = schemas["CohereRequest"]["required"].as_array().unwrap();
    assert!(required.contains(&"query".into()) && required.contains(&"documents".into()));
}

#[tokio::test]
async fn a_calibration_turns_scores_into_probabilities_and_abstains() {
    use ansel_answer::calibration::Calibration;
    let calibrated = |dir: &std::path::Path, abstain_below: f64| {
        let wo_rr = ansel_lexical::from_spec("wo-rr", &[]).unwrap().unwrap();
        let calibration = Calibration {
            model: "wo-rr".into(),
            platt: ansel_answer::calibration::Platt { a: 2.0, b: -1.0 },
            abstain_below,
            fitted_on: vec![],
            dev: serde_json::json!({}),
        };
        AppState::calibrated(
            bee_answerer(dir, wo_rr),
            Limits::default(),
            Security::default(),
            Some(calibration),
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let state = calibrated(dir.path(), 0.0);
    let texts = r#""texts": ["A worker bee lives six weeks.", "Paris is in France."]"#;
    let raw = json(
        &call(
            &state,
            "POST",
            "/rerank",
            &format!(
                r#"{{"query": "How long does a worker bee live?", {texts}, "raw_scores": true}}"#
            ),
        )
        .await
        .1,
    );
    let probs = json(
        &call(
            &state,
            "POST",
            "/rerank",
            &format!(r#"{{"query": "How long does a worker bee live?", {texts}}}"#),
        )
        .await
        .1,
    );
    for (r, p) in raw
        .as_array()
        .unwrap()
        .iter()
        .zip(probs.as_array().unwrap())
    {
        assert_eq!(r["index"], p["index"]);
        let s = r["score"].as_f64().unwrap();
        let expected = 1.0 / (1.0 + (-(2.0 * s - 1.0)).exp());
        assert!(
            (p["score"].as_f64().unwrap() - expected).abs() < 1e-5,
            "{raw} {probs}"
        );
    }
    let question = r#"{"question": "How long does a worker bee live?", "top_k": 2}"#;
    let (status, text) = call(&state, "POST", "/ask", question).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let reply = json(&text);
    assert_eq!(reply["answered"], true, "{reply}");
    assert!(
        reply["answers"][0]["probability"].as_f64().unwrap() > 0.0,
        "{reply}"
    );
    // A threshold above 1 is never reached: the same answers come back, marked unanswered.
    let dir = tempfile::tempdir().unwrap();
    let state = calibrated(dir.path(), 1.5);
    let reply = json(&call(&state, "POST", "/ask", question).await.1);
    assert_eq!(reply["answered"], false, "{reply}");
    assert_eq!(reply["abstain_below"], 1.5);
    assert_eq!(reply["answers"].as_array().unwrap().len(), 2, "{reply}");
}

#[tokio::test]
async fn the_model_field_picks_among_the_served_rerankers() {
    let dir = tempfile::tempdir().unwrap();
    let wo_rr = ansel_lexical::from_spec("wo-rr", &[]).unwrap().unwrap();
    let wo = ansel_lexical::from_spec("wo", &[]).unwrap().unwrap();
    let state = AppState::serving(
        bee_answerer(dir.path(), wo_rr),
        Limits::default(),
        Security::default(),
        None,
        vec![NamedReranker {
            ranker: wo,
            calibration: None,
        }],
    );
    let texts = r#"["Grass is green.", "A worker bee lives about six weeks.", "bee bee bee"]"#;
    let query = "How long does a worker bee live?";
    // Each model's raw scores, straight from the ranker.
    let direct = |spec: &str| {
        let ranker = ansel_lexical::from_spec(spec, &[]).unwrap().unwrap();
        let texts: Vec<String> = serde_json::from_str(texts).unwrap();
        ranker
            .score(&Question::over_texts("q", query, texts, false))
            .unwrap()
    };
    for (model, spec) in [
        (None, "wo-rr"),
        (Some("wo-rr"), "wo-rr"),
        (Some("wo"), "wo"),
    ] {
        let field = model.map_or(String::new(), |m| format!(r#""model": "{m}", "#));
        let body =
            format!(r#"{{{field}"query": "{query}", "texts": {texts}, "raw_scores": true}}"#);
        let (status, text) = call(&state, "POST", "/rerank", &body).await;
        assert_eq!(status, StatusCode::OK, "{text}");
        let expected = direct(spec);
        for rank in json(&text).as_array().unwrap() {
            let i = rank["index"].as_u64().unwrap() as usize;
            assert_eq!(
                rank["score"].as_f64().unwrap() as f32,
                expected[i],
                "{model:?}"
            );
        }
        let body = format!(r#"{{{field}"query": "{query}", "documents": {texts}}}"#);
        let (status, text) = call(&state, "POST", "/v2/rerank", &body).await;
        assert_eq!(status, StatusCode::OK, "{text}");
        assert_eq!(json(&text)["model"], model.unwrap_or("wo"));
    }
    let (status, text) = call(
        &state,
        "POST",
        "/v2/rerank",
        r#"{"model": "rerank-english-v3.0", "query": "q", "documents": ["a"]}"#,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{text}");
    assert!(text.contains("served: wo, wo-rr"), "{text}");
    let (status, text) = call(
        &state,
        "POST",
        "/rerank",
        r#"{"model": "nope", "query": "q", "texts": ["a"]}"#,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{text}");
    let (_, text) = call(&state, "GET", "/info", "").await;
    assert_eq!(
        json(&text)["rerank_models"],
        serde_json::json!(["wo", "wo-rr"])
    );
    let (_, text) = call(&state, "GET", "/health", "").await;
    assert_eq!(
        json(&text)["rerank_models"],
        serde_json::json!(["wo", "wo-rr"])
    );
}

/// A reranker with a fixed cost per call and a cost per pair, like a model's pass.
struct Paced;

impl ansel_model::Ranker for Paced {
    fn name(&self) -> &str {
        "paced"
    }

    fn score(&self, q: &Question) -> ansel_model::Result<Vec<f32>> {
        std::thread::sleep(Duration::from_millis(40 + 2 * q.candidates.len() as u64));
        Ok(vec![0.5; q.candidates.len()])
    }
}

#[tokio::test]
async fn tiny_requests_do_not_make_an_idle_server_refuse_a_large_one() {
    // The audit's case: one-word probes, then 30 sentences (about 100 ms of work here) on an
    // otherwise idle server got 503 "the work queued ahead would take about 2151 ms".
    let dir = tempfile::tempdir().unwrap();
    let state = state_with_reranker(dir.path(), Limits::default(), Box::new(Paced));
    for _ in 0..3 {
        let (status, text) = call(
            &state,
            "POST",
            "/rerank",
            r#"{"query": "bees", "texts": ["hive"]}"#,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{text}");
    }
    let sentence = "A worker bee lives about six weeks in summer and longer in winter.";
    let texts = vec![sentence; 30];
    let body =
        serde_json::json!({"query": "How long does a worker bee live in summer?", "texts": texts});
    for _ in 0..3 {
        let (status, text) = call(&state, "POST", "/rerank", &body.to_string()).await;
        assert_eq!(status, StatusCode::OK, "{text}");
    }
}

/// A reranker that takes 10 ms a pair.
struct TenMsAPair;

impl ansel_model::Ranker for TenMsAPair {
    fn name(&self) -> &str {
        "ten-ms-a-pair"
    }

    fn score(&self, q: &Question) -> ansel_model::Result<Vec<f32>> {
        std::thread::sleep(Duration::from_millis(10 * q.candidates.len() as u64));
        Ok(vec![0.5; q.candidates.len()])
    }
}

#[tokio::test]
async fn a_list_past_its_deadline_stops_being_scored_and_frees_the_worker() {
    // 256 texts take this reranker 2.56 s; the deadline is 600 ms. The client gets 503 at its
    // deadline, and the worker gives the list up within a slice, so a small request sent then
    // is answered in its own time instead of waiting out the abandoned list.
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        timeout: Duration::from_millis(600),
        ..Limits::default()
    };
    let state = state_with_reranker(dir.path(), limits, Box::new(TenMsAPair));
    let small = r#"{"query": "bees", "texts": ["hive"]}"#;
    // One small list first: the worker's estimate then prices the big one at its 2.56 s, and
    // must not keep refusing for all of it once the list has been given up.
    let (status, text) = call(&state, "POST", "/rerank", small).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let big = serde_json::json!({"query": "bees", "texts": vec!["a hive of bees"; 256]});
    let (status, text) = call(&state, "POST", "/rerank", &big.to_string()).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{text}");
    let (status, text) = call(&state, "POST", "/rerank", small).await;
    assert_eq!(status, StatusCode::OK, "{text}");
}

/// A reranker whose tokenizer gives one token per byte, as real tokenizers do with runs of
/// punctuation or digits (one whitespace "word" to the word limits).
struct ByteTokens;

impl ansel_model::Ranker for ByteTokens {
    fn name(&self) -> &str {
        "bytes"
    }

    fn score(&self, question: &Question) -> ansel_model::Result<Vec<f32>> {
        Ok(vec![0.0; question.candidates.len()])
    }

    fn tokenize(
        &self,
        text: &str,
        pair: Option<&str>,
        _special: bool,
    ) -> Option<ansel_model::Result<Vec<ansel_model::Token>>> {
        let bytes = text.len() + pair.map_or(0, str::len);
        Some(Ok((0..bytes)
            .map(|i| ansel_model::Token {
                id: 1,
                text: ".".into(),
                special: false,
                start: Some(i),
                stop: Some(i + 1),
            })
            .collect()))
    }
}

#[tokio::test]
async fn tokenize_bounds_tokens_not_only_words() {
    // The audit's bomb: one "word" of punctuation gave a million tokens (a 67.8 MB response).
    let dir = tempfile::tempdir().unwrap();
    let state = state_with_reranker(dir.path(), Limits::default(), Box::new(ByteTokens));
    let limits = Limits::default();
    let bomb = ".,".repeat(limits.max_text_bytes);
    let body = serde_json::json!({"inputs": bomb}).to_string();
    let (status, text) = call(&state, "POST", "/tokenize", &body).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{text}");
    assert!(
        text.contains("inputs[0]") && text.contains("bytes"),
        "{text}"
    );
    // Under the byte limit but over the tokens of one input.
    let long = ".".repeat(limits.max_tokens_per_text + 1);
    let body = serde_json::json!({"inputs": [long]}).to_string();
    let (status, text) = call(&state, "POST", "/tokenize", &body).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{text}");
    assert!(
        text.contains("inputs[0]") && text.contains("tokens"),
        "{text}"
    );
    // Every input within its limits, the request over its total.
    let each = ".".repeat(limits.max_tokens_per_text);
    let n = limits.max_request_tokens / limits.max_tokens_per_text + 1;
    let body = serde_json::json!({"inputs": vec![each; n]}).to_string();
    let (status, text) = call(&state, "POST", "/tokenize", &body).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{text}");
    assert!(text.contains("the request has more than"), "{text}");
    // /rerank takes the byte limit too (a word of punctuation is one word).
    let body = serde_json::json!({"query": "q", "texts": [".,".repeat(limits.max_text_bytes)]});
    let (status, text) = call(&state, "POST", "/rerank", &body.to_string()).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{text}");
    let body = serde_json::json!({"query": "q", "texts": [".,".repeat(limits.max_text_bytes)], "truncate": true});
    let (status, text) = call(&state, "POST", "/rerank", &body.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_heads_over_64_kib_get_431() {
    use tokio::io::AsyncWriteExt;
    let dir = tempfile::tempdir().unwrap();
    let state = test_state(dir.path(), Limits::default());
    let (addr, stop, server) = serve_on_loopback(state, ConnectionLimits::default()).await;
    let head = |value: &str| {
        format!("GET /health HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\nx-pad: {value}\r\n\r\n")
    };
    let fixed = head("").len();
    // 64 KiB is served, a byte more is not (the guide's cap); so are 70,000 bytes in one header
    // and 90 headers of 1,000 bytes, which hyper's buffer alone let through.
    let many = (0..90)
        .map(|i| format!("x-h{i}: {}\r\n", "a".repeat(1000)))
        .collect::<String>();
    let cases = [
        (head(&"a".repeat(guard::MAX_HEAD_BYTES - fixed)), "200 OK"),
        (head(&"a".repeat(guard::MAX_HEAD_BYTES + 1 - fixed)), "431"),
        (head(&"a".repeat(70_000 - fixed)), "431"),
        (
            format!("GET /health HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n{many}\r\n"),
            "431",
        ),
    ];
    for (request, expected) in cases {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let answer = read_to_close(&mut stream).await;
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {expected}")),
            "{} bytes: {answer:.100}",
            request.len()
        );
    }
    let _ = stop.send(());
    server.await.unwrap().unwrap();
}

/// The admission estimate of tokens stays near what the shipped models' tokenizers make, on
/// prose and on the texts words miscount (punctuation runs, digits, CJK).
#[test]
fn estimated_tokens_follow_the_models_tokenizers() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models");
    let mut texts: Vec<String> = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/sample-questions.jsonl"
    ))
    .unwrap()
    .lines()
    .flat_map(|line| {
        let question: serde_json::Value = serde_json::from_str(line).unwrap();
        let mut texts = vec![question["question"].as_str().unwrap().to_string()];
        for candidate in question["candidates"].as_array().unwrap() {
            texts.push(candidate["text"].as_str().unwrap().to_string());
        }
        texts
    })
    .collect();
    assert!(texts.len() > 20, "{}", texts.len());
    let odd = [
        ".,".repeat(500),
        "1234567890 ".repeat(3) + &"1234567890".repeat(5),
        "東京タワーは高さ三百三十三メートルの電波塔です。".to_string(),
        "Zweihundertfünfundsiebzigtausend Donaudampfschifffahrtsgesellschaften".to_string(),
    ];
    texts.extend(odd.iter().cloned());
    for model in [
        "mpnet-base-squad-tanda-int8",
        "minilm-l6-general-distilled-int8",
    ] {
        let mut tokenizer =
            tokenizers::Tokenizer::from_file(format!("{root}/{model}/tokenizer.json")).unwrap();
        tokenizer.with_padding(None).with_truncation(None).unwrap();
        let (mut estimated, mut real) = (0usize, 0usize);
        for text in &texts {
            let tokens = tokenizer.encode(text.as_str(), false).unwrap().len();
            let estimate = crate::estimated_tokens(text);
            estimated += estimate;
            real += tokens;
            // No text is off by more than a factor of 3 either way.
            assert!(
                estimate * 3 >= tokens && estimate <= tokens * 3 + 3,
                "{model}: {text:.60}: estimated {estimate}, tokenizer {tokens}"
            );
        }
        let ratio = estimated as f64 / real as f64;
        assert!((0.8..1.25).contains(&ratio), "{model}: ratio {ratio:.2}");
    }
    assert_eq!(crate::estimated_tokens("The tower is 330 metres tall."), 7);
    assert_eq!(crate::estimated_tokens(&".,".repeat(500)), 1000);
    assert_eq!(crate::estimated_tokens("  "), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_is_cut_off_and_its_answer_freed() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // Limits raised so that one /tokenize answer (about 40 MB) outgrows every socket buffer.
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_tokens_per_text: 1 << 20,
        max_request_tokens: 1 << 20,
        max_text_bytes: 1 << 20,
        max_words_per_text: 1 << 20,
        max_request_words: 1 << 20,
        max_body_bytes: 2 << 20,
        ..Limits::default()
    };
    let state = state_with_reranker(dir.path(), limits, Box::new(ByteTokens));
    let connections = ConnectionLimits {
        write_timeout: Duration::from_millis(300),
        ..ConnectionLimits::default()
    };
    let (addr, stop, server) = serve_on_loopback(state, connections).await;
    let body = serde_json::json!({"inputs": ".".repeat(600_000)}).to_string();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut client = socket.connect(addr).await.unwrap();
    let request = format!(
        "POST /tokenize HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    );
    client.write_all(request.as_bytes()).await.unwrap();
    // Not reading for well past the write timeout: the server gives up on the connection.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let mut received = Vec::new();
    let outcome = tokio::time::timeout(Duration::from_secs(10), client.read_to_end(&mut received))
        .await
        .expect("the server did not close the connection within 10 s");
    let head = String::from_utf8_lossy(&received[..received.len().min(200)]).into_owned();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let promised: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length: ")
                .map(|v| v.trim().parse().unwrap())
        })
        .unwrap_or(usize::MAX);
    assert!(
        outcome.is_err() || received.len() < promised,
        "the whole answer ({} bytes) was kept for a client that did not read",
        received.len()
    );
    let _ = stop.send(());
    let _ = server.await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_several_models_a_busy_one_refuses_before_parsing_the_texts() {
    // Two models served: the asked-for one's queue refuses a request under overload from its
    // `model` field alone; the texts (here malformed) are never parsed.
    let dir = tempfile::tempdir().unwrap();
    let wo_rr = ansel_lexical::from_spec("wo-rr", &[]).unwrap().unwrap();
    let limits = Limits {
        timeout: Duration::from_millis(200),
        ..Limits::default()
    };
    let state = AppState::serving(
        bee_answerer(dir.path(), wo_rr),
        limits,
        Security::default(),
        None,
        vec![NamedReranker {
            ranker: Box::new(TenMsAPair),
            calibration: None,
        }],
    );
    let busy = serde_json::json!({"query": "bees", "texts": vec!["a hive"; 30]}).to_string();
    // One list the worker times (about 240 ms, past its deadline), then one that keeps it busy.
    let (status, _) = call(&state, "POST", "/rerank", &busy).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let keeping = tokio::spawn({
        let state = state.clone();
        async move { call(&state, "POST", "/rerank", &busy).await }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    let malformed = r#"{"model": "ten-ms-a-pair", "query": "bees", "texts": 5}"#;
    let (status, text) = call(&state, "POST", "/rerank", malformed).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{text}");
    let _ = keeping.await;
}

/// Sends one keep-alive `POST` on `stream` and reads its answer: the status code and the body.
async fn exchange(stream: &mut tokio::net::TcpStream, path: &str, body: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut received = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "closed before a response head");
        received.extend_from_slice(&chunk[..n]);
        if let Some(i) = received.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&received[..head_end]).to_lowercase();
    let status = head[9..12].parse().unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    while received.len() < head_end + length {
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "closed inside a response body");
        received.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&received[head_end..head_end + length]).into_owned();
    (status, text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_sent_before_its_retry_after_waits_until_then_on_its_connection_only() {
    // Issue 41: clients retrying 50 ms after each 503 made the server spend on refusals the CPU
    // that admitted requests needed. A retry is now held (a timer) until its Retry-After ends.
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let (open, state) = gated_state(dir.path(), Duration::from_millis(300));
    let (addr, stop, server) = serve_on_loopback(state, ConnectionLimits::default()).await;
    let body = r#"{"query": "bees", "texts": ["bees"]}"#;
    let mut hammer = tokio::net::TcpStream::connect(addr).await.unwrap();
    // The worker blocks in the model: 503 at the deadline, with Retry-After: 1.
    let (status, text) = exchange(&mut hammer, "/rerank", body).await;
    assert_eq!(status, 503, "{text}");
    let refused_at = Instant::now();
    drop(open); // the model scores again from now on
    let retry = tokio::spawn(async move {
        let answer = exchange(&mut hammer, "/rerank", body).await;
        (answer, refused_at.elapsed(), hammer)
    });
    // Another connection is served at once meanwhile.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut other = tokio::net::TcpStream::connect(addr).await.unwrap();
    let sent = Instant::now();
    let (status, text) = exchange(&mut other, "/rerank", body).await;
    assert_eq!(status, 200, "{text}");
    assert!(
        sent.elapsed() < Duration::from_millis(700),
        "{:?}",
        sent.elapsed()
    );
    // The immediate retry was handled once its Retry-After was over, then admitted.
    let ((status, text), waited, mut hammer) = retry.await.unwrap();
    assert_eq!(status, 200, "{text}");
    assert!(waited >= Duration::from_millis(850), "{waited:?}");
    // A 200 releases the connection: its next request is not held.
    let sent = Instant::now();
    let (status, text) = exchange(&mut hammer, "/rerank", body).await;
    assert_eq!(status, 200, "{text}");
    assert!(
        sent.elapsed() < Duration::from_millis(700),
        "{:?}",
        sent.elapsed()
    );
    let _ = stop.send(());
    server.await.unwrap().unwrap();
}
