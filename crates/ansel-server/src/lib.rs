//! The ansel HTTP server.
//!
//! | route | what |
//! |---|---|
//! | `POST /rerank` | text-embeddings-inference compatible: `{"query", "texts", "raw_scores", "return_text", "truncate"}` → `[{"index", "score", "text"?}]`, best first |
//! | `POST /v2/rerank`, `POST /v1/rerank` | Cohere compatible: `{"model"?, "query", "documents": [string or {"text"}], "top_n"?, "return_documents"?, "max_tokens_per_doc"?}` → `{"id", "results": [{"index", "relevance_score", "document"?}], "meta", "model", "usage"}` |
//! | `GET /info` | text-embeddings-inference's model and limits |
//! | `POST /tokenize` | text-embeddings-inference compatible: `{"inputs": text, [text, ...] or [[query, passage], ...], "add_special_tokens"?}` → per input `[{"id", "text", "special", "start", "stop"}]` (422 for a lexical model) |
//! | `POST /ask` | `{"question", "top_k", "budget_ms"?}` → answers from the index with their context |
//! | `GET /health` | `{"status": "ok", ...}` with index counts and models |
//! | `GET /metrics` | Prometheus text |
//! | `GET /openapi.json` | the OpenAPI 3.1 document of these routes, generated from their types ([`openapi`]) |
//! | `GET /` | a page to ask questions over the index |
//!
//! Requests over a limit get a JSON error `{"error", "error_type"}`: 413 for
//! too many texts or bytes, 400/422 for malformed input, 415 for a POST that is
//! not JSON, 408 for a body that does not arrive in time, 401 without the API key
//! (when one is set), 421 for a Host not served here, and 503 with `Retry-After`
//! when the server is full or cannot answer before the request's deadline.
//! Concurrent requests wait in a queue per route, and a worker scores everything
//! queued together; a request that cannot be answered in time is refused when it
//! arrives, not after it times out ([`Batcher`]).

mod batcher;
mod cohere;
pub mod connections;
mod guard;
pub mod loadtest;
mod metrics;
pub mod openapi;
mod tokenize;

pub use batcher::{BatchError, BatchLimits, Batcher};
pub use connections::ConnectionLimits;
pub use guard::{Arrival, Security};
pub use metrics::Metrics;

use ansel_answer::calibration::{Calibration, Platt};
use ansel_answer::{AnswerError, Answerer, Answers, Ask, Retrieval};
use ansel_data::{Candidate, Question};
use ansel_model::ModelError;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Extension, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use utoipa::ToSchema;

/// What one request may ask of the server.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Texts in one `/rerank` request.
    pub max_texts: usize,
    /// Bytes in one request body.
    pub max_body_bytes: usize,
    /// Words in one text (and in a query or question); longer texts are refused unless
    /// `truncate` is set.
    pub max_words_per_text: usize,
    /// Words in one `/rerank` request, query and texts together: what one client may ask a
    /// worker to score at once.
    pub max_request_words: usize,
    /// Tokens (estimated, [`estimated_tokens`]) a worker scores in one batch, every pair
    /// counting its query; a request above it is scored alone.
    pub max_batch_tokens: usize,
    /// Answers one `/ask` may request.
    pub max_top_k: usize,
    /// Time from arrival to response; `/ask` also gives its cascade this budget.
    pub timeout: Duration,
    /// Requests a worker scores together.
    pub max_batch: usize,
    /// Requests that may wait per route before the server answers 503.
    pub queue_len: usize,
    /// Time for a request body to arrive once its head has.
    pub body_timeout: Duration,
    /// Requests being read, queued or scored at once (all routes); more get 503.
    pub max_in_flight: usize,
    /// Names a request may give as its `model` (Cohere routes); empty: any name.
    pub served_models: Vec<String>,
    /// Bytes in one text: bounds what a "word" of punctuation, digits or CJK (which the word
    /// limits count as one word) may cost a tokenizer.
    pub max_text_bytes: usize,
    /// Tokens `/tokenize` returns for one input, and for one request.
    pub max_tokens_per_text: usize,
    pub max_request_tokens: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_texts: 256,
            max_body_bytes: 1 << 20,
            max_words_per_text: 512,
            max_request_words: 16_384,
            max_batch_tokens: 65_536,
            max_top_k: 50,
            timeout: Duration::from_secs(2),
            max_batch: 32,
            queue_len: 256,
            body_timeout: Duration::from_secs(10),
            max_in_flight: 512,
            served_models: Vec::new(),
            max_text_bytes: 16 * 1024,
            max_tokens_per_text: 2048,
            max_request_tokens: 32_768,
        }
    }
}

/// A rerank job: the question with its candidates, and when its caller stops waiting.
struct RerankJob {
    question: Question,
    deadline: Instant,
}

/// Pairs a worker scores between two looks at the clock: a list longer than this is scored in
/// slices of it, and abandoned at its deadline, when its caller has had 503 and nobody waits for
/// the rest (a list of 256 long texts takes the default model many seconds, which every request
/// queued behind would wait out).
const PAIRS_PER_SLICE: usize = 8;
type RerankResult = Result<Vec<f32>, ApiError>;
type AskResult = Result<Answers, ApiError>;

/// A model that cannot score this input (e.g. `rr` without document order) is
/// the request's fault (422); anything else is the server's (500).
fn model_failure(err: &ModelError) -> ApiError {
    match err {
        ModelError::Unsupported { .. } => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Unsupported",
            err.to_string(),
        ),
        _ => ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Backend",
            err.to_string(),
        ),
    }
}

fn answer_failure(err: &AnswerError) -> ApiError {
    match err {
        AnswerError::Model(err) => model_failure(err),
        _ => ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Backend",
            err.to_string(),
        ),
    }
}

pub struct AppState {
    answerer: Arc<Answerer>,
    /// The reranker's calibration: what a score means and when `/ask` abstains.
    calibration: Option<Calibration>,
    limits: Limits,
    security: Security,
    in_flight: Arc<tokio::sync::Semaphore>,
    metrics: Arc<Metrics>,
    /// The reranking models, each with its own queue and worker: the cascade's reranker first
    /// (what a request that names no model gets), then [`AppState::serving`]'s others.
    rerankers: Vec<Served>,
    ask_queue: Batcher<Ask, AskResult>,
}

/// A model another than the cascade's that the reranking routes serve by name
/// (`ansel serve --rerank-model`), with its calibration.
pub struct NamedReranker {
    pub ranker: Box<dyn ansel_model::Ranker>,
    pub calibration: Option<Calibration>,
}

/// A reranking model as the routes reach it.
struct Served {
    name: String,
    calibration: Option<Calibration>,
    queue: Batcher<RerankJob, RerankResult>,
}

/// A worker that scores queued rerank jobs with `rerank`, batched.
fn rerank_worker(
    name: &str,
    limits: BatchLimits,
    metrics: Arc<Metrics>,
    rerank: impl std::ops::Deref<Target = dyn ansel_model::Ranker> + Send + 'static,
) -> Batcher<RerankJob, RerankResult> {
    Batcher::spawn(name, limits, move |jobs: Vec<RerankJob>| {
        metrics.batch("rerank", jobs.len());
        let pairs: usize = jobs.iter().map(|j| j.question.candidates.len()).sum();
        if pairs > PAIRS_PER_SLICE && !rerank.reads_whole_list() {
            return jobs
                .iter()
                .map(|job| score_in_slices(&*rerank, job))
                .collect();
        }
        let questions: Vec<Question> = jobs.into_iter().map(|j| j.question).collect();
        match rerank.score_all(&questions) {
            Ok(scores) => scores.into_iter().map(Ok).collect(),
            // One bad request must not fail the others batched with it.
            Err(_) => questions
                .iter()
                .map(|question| rerank.score(question).map_err(|e| model_failure(&e)))
                .collect(),
        }
    })
}

/// A job's scores, [`PAIRS_PER_SLICE`] candidates at a time (a pair's score is its own for a
/// ranker that does not read whole lists), given up once its deadline has passed.
fn score_in_slices(rerank: &dyn ansel_model::Ranker, job: &RerankJob) -> RerankResult {
    let question = &job.question;
    let mut scores = Vec::with_capacity(question.candidates.len());
    for slice in question.candidates.chunks(PAIRS_PER_SLICE) {
        if Instant::now() >= job.deadline {
            return Err(ApiError::past_deadline());
        }
        let part = Question {
            id: question.id.clone(),
            text: question.text.clone(),
            candidates: slice.to_vec(),
        };
        scores.extend(rerank.score(&part).map_err(|e| model_failure(&e))?);
    }
    Ok(scores)
}

impl AppState {
    /// [`AppState::secured`] open to any caller on any Host (tests, loopback tools).
    pub fn new(answerer: Answerer, limits: Limits) -> Arc<AppState> {
        Self::secured(answerer, limits, Security::default())
    }

    /// Starts the workers that score `/rerank` (with the cascade's reranker)
    /// and `/ask` (with the whole cascade) requests in batches.
    pub fn secured(answerer: Answerer, limits: Limits, security: Security) -> Arc<AppState> {
        Self::calibrated(answerer, limits, security, None)
    }

    /// [`AppState::secured`] with a calibration of the reranker (`ansel calibrate --out`): scores
    /// become its probabilities, and `/ask` says when no answer clears its threshold.
    pub fn calibrated(
        answerer: Answerer,
        limits: Limits,
        security: Security,
        calibration: Option<Calibration>,
    ) -> Arc<AppState> {
        Self::serving(answerer, limits, security, calibration, Vec::new())
    }

    /// [`AppState::calibrated`] whose reranking routes serve `others` too, each by its name (the
    /// `model` field of a request) with a worker of its own: the first of `others` is what a
    /// request that names no model gets, and the cascade's reranker stays reachable by its name.
    pub fn serving(
        answerer: Answerer,
        limits: Limits,
        security: Security,
        calibration: Option<Calibration>,
        others: Vec<NamedReranker>,
    ) -> Arc<AppState> {
        let answerer = Arc::new(answerer);
        let metrics = Arc::new(Metrics::default());
        let batch_limits = BatchLimits {
            max_jobs: limits.max_batch,
            max_cost: limits.max_batch_tokens,
            queue_len: limits.queue_len,
        };
        // The cascade's reranker, reached through the answerer it belongs to.
        struct CascadeReranker(Arc<Answerer>);
        impl std::ops::Deref for CascadeReranker {
            type Target = dyn ansel_model::Ranker;
            fn deref(&self) -> &Self::Target {
                self.0.cascade.rerank.as_ref()
            }
        }
        let mut rerankers = Vec::new();
        for other in others {
            let name = other.ranker.name().to_string();
            rerankers.push(Served {
                queue: rerank_worker(&name, batch_limits, metrics.clone(), other.ranker),
                name,
                calibration: other.calibration,
            });
        }
        let cascade_name = answerer.cascade.rerank.name().to_string();
        if !rerankers.iter().any(|r| r.name == cascade_name) {
            rerankers.push(Served {
                name: cascade_name,
                calibration: calibration.clone(),
                queue: rerank_worker(
                    "rerank",
                    batch_limits,
                    metrics.clone(),
                    CascadeReranker(answerer.clone()),
                ),
            });
        }
        let ask_queue = {
            let (answerer, metrics) = (answerer.clone(), metrics.clone());
            Batcher::spawn("ask", batch_limits, move |asks| {
                metrics.batch("ask", asks.len());
                match answerer.ask_batch(&asks) {
                    Ok(results) => results
                        .into_iter()
                        .map(|r| r.map_err(|e| answer_failure(&e)))
                        .collect(),
                    Err(e) => asks.iter().map(|_| Err(answer_failure(&e))).collect(),
                }
            })
        };
        Arc::new(AppState {
            answerer,
            calibration,
            in_flight: Arc::new(tokio::sync::Semaphore::new(limits.max_in_flight.max(1))),
            limits,
            security,
            metrics,
            rerankers,
            ask_queue,
        })
    }
}

/// The router with every route and the body limit.
pub fn app(state: Arc<AppState>) -> Router {
    let body_limit = state.limits.max_body_bytes;
    Router::new()
        .route("/", get(page))
        .route("/rerank", post(rerank))
        .route("/v2/rerank", post(cohere::rerank_v2))
        .route("/v1/rerank", post(cohere::rerank_v1))
        .route("/info", get(cohere::info))
        .route("/tokenize", post(tokenize::tokenize))
        .route("/openapi.json", get(openapi::openapi_json))
        .route("/ask", post(ask))
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::guard,
        ))
        .with_state(state)
}

/// Serves `app` on `listener` until `shutdown` resolves, then finishes the
/// requests in flight within `limits.grace`.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<AppState>,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    connections::serve(listener, app(state), limits, shutdown).await
}

/// Binds `addr`, tells `on_listen` the address it got (port 0 picks a free
/// one), and serves until SIGTERM or Ctrl-C, then finishes the requests in
/// flight within the grace period and returns, stalled clients or not.
pub fn run(
    addr: std::net::SocketAddr,
    state: Arc<AppState>,
    limits: ConnectionLimits,
    on_listen: impl FnOnce(std::net::SocketAddr),
) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let served = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        // Before anyone learns the address: a SIGTERM sent as soon as it is printed must find
        // the handler installed, or the default action kills the server mid-request.
        let shutdown = shutdown_signal()?;
        on_listen(listener.local_addr()?);
        serve(listener, state, limits, shutdown).await
    });
    // Connections still open after the grace period are dropped, not waited for.
    runtime.shutdown_background();
    served
}

/// Installs the SIGTERM and Ctrl-C handlers now (tokio's own futures install theirs only when
/// first polled) and returns a future that resolves on either.
fn shutdown_signal() -> std::io::Result<impl Future<Output = ()> + Send + 'static> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut terminate = signal(SignalKind::terminate())?;
        let mut interrupt = signal(SignalKind::interrupt())?;
        Ok(async move {
            tokio::select! {
                _ = terminate.recv() => {},
                _ = interrupt.recv() => {},
            }
        })
    }
    #[cfg(not(unix))]
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
    })
}

/// A JSON error in text-embeddings-inference's shape.
#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    error_type: &'static str,
    message: String,
    /// Sent as `Retry-After` (whole seconds, at least 1).
    retry_after: Option<Duration>,
}

impl ApiError {
    fn new(status: StatusCode, error_type: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            error_type,
            message: message.into(),
            retry_after: None,
        }
    }

    /// 503 with `Retry-After`.
    fn overloaded(message: impl Into<String>, retry_after: Duration) -> Self {
        ApiError {
            retry_after: Some(retry_after),
            ..Self::new(StatusCode::SERVICE_UNAVAILABLE, "Overloaded", message)
        }
    }

    /// 503: the request's deadline passed before its answer was ready.
    fn past_deadline() -> Self {
        Self::overloaded(
            "no answer before the request's deadline",
            Duration::from_secs(1),
        )
    }

    fn validation(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "Validation", message)
    }

    fn too_large(message: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, "Validation", message)
    }

    fn from_batch(error: BatchError) -> Self {
        match error {
            BatchError::QueueFull => {
                Self::overloaded("too many requests waiting; retry later", Duration::from_secs(1))
            }
            BatchError::WouldMissDeadline { retry_after } => Self::overloaded(
                format!(
                    "the work queued ahead would take about {} ms, past this request's deadline; retry later",
                    retry_after.as_millis()
                ),
                retry_after,
            ),
            BatchError::Expired => Self::overloaded(
                "the deadline passed while the request waited; retry later",
                Duration::from_secs(1),
            ),
            BatchError::WorkerGone => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "Unhealthy",
                "the scoring worker has stopped",
            ),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({"error": self.message, "error_type": self.error_type});
        let mut response = json_response(self.status, &body);
        if let Some(after) = self.retry_after {
            let seconds = after.as_secs_f64().ceil().max(1.0) as u64;
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from(seconds));
        }
        response
    }
}

type ApiResult<T> = Result<T, ApiError>;

fn json_response(status: StatusCode, value: &impl Serialize) -> Response {
    match serde_json::to_vec(value) {
        Ok(bytes) => (status, [(header::CONTENT_TYPE, "application/json")], bytes).into_response(),
        // These plain structs always serialize; answer 500 rather than panic if one ever fails.
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "application/json")],
            serde_json::json!({"error": e.to_string(), "error_type": "Backend"}).to_string(),
        )
            .into_response(),
    }
}

/// Runs a handler, turns its result into a response and records it.
async fn measured<T: Serialize>(
    state: &AppState,
    endpoint: &'static str,
    handler: impl Future<Output = ApiResult<T>>,
) -> Response {
    let start = Instant::now();
    let response = match handler.await {
        Ok(value) => json_response(StatusCode::OK, &value),
        Err(e) => e.into_response(),
    };
    state
        .metrics
        .request(endpoint, response.status().as_u16(), start.elapsed());
    response
}

/// Parses a JSON body, naming what is wrong with it.
fn parse_body<T: serde::de::DeserializeOwned>(
    body: Result<Bytes, BytesRejection>,
    limit: usize,
) -> ApiResult<T> {
    let bytes = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::too_large(format!("request body is larger than {limit} bytes"))
        } else {
            ApiError::new(rejection.status(), "Validation", rejection.body_text())
        }
    })?;
    // Syntax first (400), then the fields (422), whose errors name the field at fault.
    let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "Validation",
            format!("invalid JSON body: {e}"),
        )
    })?;
    let invalid = |message: String| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Validation",
            format!("invalid JSON body: {message}"),
        )
    };
    if !value.is_object() {
        return Err(invalid("expected a JSON object".to_string()));
    }
    ansel_model::json::from_value(value, "").map_err(invalid)
}

/// Waits for a queued job until the request's deadline.
async fn within_time<T>(
    deadline: Instant,
    job: impl Future<Output = Result<T, BatchError>>,
) -> ApiResult<T> {
    match tokio::time::timeout_at(deadline.into(), job).await {
        Ok(result) => result.map_err(ApiError::from_batch),
        Err(_) => Err(ApiError::past_deadline()),
    }
}

/// When the request arrived (set by the guard; now, for a router used without it).
fn arrived(arrival: Option<Extension<Arrival>>) -> Instant {
    arrival.map_or_else(Instant::now, |Extension(Arrival(at))| at)
}

/// `/rerank`'s body (text-embeddings-inference's).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct RerankRequest {
    #[schema(min_length = 1)]
    query: String,
    #[schema(min_items = 1)]
    texts: Vec<String>,
    /// The model's scores as they are, not squashed into (0, 1).
    #[serde(default)]
    raw_scores: bool,
    #[serde(default)]
    return_text: bool,
    /// Cut texts over the word limit instead of refusing them (413).
    #[serde(default)]
    truncate: bool,
    #[serde(default)]
    truncation_direction: TruncationDirection,
    /// The served model to score with, by name (ansel's addition to TEI's body; `GET /info`
    /// lists them): the server's default when absent.
    #[serde(default)]
    model: Option<String>,
}

#[derive(Deserialize, Default, Clone, Copy, ToSchema)]
enum TruncationDirection {
    Left,
    #[default]
    Right,
}

/// One text's place: best first.
#[derive(Serialize, Debug, PartialEq, ToSchema)]
struct Rank {
    index: usize,
    score: f32,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
}

/// `POST /rerank`.
#[utoipa::path(
    post,
    path = "/rerank",
    tag = "text-embeddings-inference",
    request_body = RerankRequest,
    responses(
        (status = 200, description = "Every text, best first", body = Vec<Rank>),
        (status = 404, description = "A `model` the server does not serve (`serve --rerank-model`); the message names the served ones", body = crate::openapi::ErrorBody),
    ),
)]
async fn rerank(
    State(state): State<Arc<AppState>>,
    arrival: Option<Extension<Arrival>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let deadline = arrived(arrival) + state.limits.timeout;
    measured(&state, "/rerank", async {
        state.admits_before_parsing(deadline, &body)?;
        let request: RerankRequest = parse_body(body, state.limits.max_body_bytes)?;
        let served = state.reranker(request.model.as_deref())?;
        let fit = Fit {
            field: "texts",
            truncate: request.truncate,
            direction: request.truncation_direction,
            max_words: state.limits.max_words_per_text,
        };
        let (scores, _) = score_texts(
            &state,
            served,
            deadline,
            &request.query,
            &request.texts,
            fit,
        )
        .await?;
        Ok(ranks(
            served,
            scores,
            &request.texts,
            request.raw_scores,
            request.return_text,
        ))
    })
    .await
}

/// How a route's texts are named in errors and treated over the word limit.
#[derive(Clone, Copy)]
struct Fit {
    /// The request field holding the texts.
    field: &'static str,
    truncate: bool,
    direction: TruncationDirection,
    max_words: usize,
}

/// The reranker's raw score of every text for `query` (in the texts' order), after the
/// per-request limits, and the words scored (query and fitted texts); shared by every
/// reranking route, so a pair scores the same on each.
async fn score_texts(
    state: &AppState,
    served: &Served,
    deadline: Instant,
    query: &str,
    texts: &[String],
    fit: Fit,
) -> ApiResult<(Vec<f32>, usize)> {
    let limits = &state.limits;
    if query.trim().is_empty() {
        return Err(ApiError::validation("`query` is empty"));
    }
    let mut words = within_words(query, "query", limits.max_words_per_text)?;
    within_bytes(query, "query", limits.max_text_bytes)?;
    let query_tokens = estimated_tokens(query);
    // What the model reads: every pair its query, its text and the separators.
    let mut tokens = 0;
    if texts.is_empty() {
        return Err(ApiError::validation(format!("`{}` is empty", fit.field)));
    }
    if texts.len() > limits.max_texts {
        return Err(ApiError::too_large(format!(
            "`{}` has {} texts, more than the limit of {}",
            fit.field,
            texts.len(),
            limits.max_texts
        )));
    }
    let mut candidates = Vec::with_capacity(texts.len());
    for (index, text) in texts.iter().enumerate() {
        let text = fit_words(text, fit.max_words, fit.truncate, fit.direction)
            .and_then(|text| fit_bytes(text, limits.max_text_bytes, fit.truncate))
            .ok_or_else(|| {
                ApiError::too_large(format!(
                    "`{}[{index}]` has more than {} words or {} bytes; send \"truncate\": true \
                     to cut it",
                    fit.field, fit.max_words, limits.max_text_bytes
                ))
            })?;
        words += word_count(&text);
        tokens += query_tokens + estimated_tokens(&text) + PAIR_SPECIAL_TOKENS;
        if words > limits.max_request_words {
            return Err(ApiError::too_large(format!(
                "the request has more than {} words to score (query and texts together); \
                 split it",
                limits.max_request_words
            )));
        }
        candidates.push(Candidate {
            id: index.to_string(),
            text,
            label: None,
            context: None,
        });
    }
    let question = Question {
        id: "rerank".into(),
        text: query.to_string(),
        candidates,
    };
    let scores = served
        .queue
        .submit(RerankJob { question, deadline }, tokens, deadline);
    Ok((within_time(deadline, scores).await??, words))
}

fn word_count(text: &str) -> usize {
    text.split_whitespace().count()
}

/// `[CLS] query [SEP] text [SEP]`: the tokens a pair adds to its two texts.
const PAIR_SPECIAL_TOKENS: usize = 3;

/// About as many tokens as a subword tokenizer (WordPiece, SentencePiece) makes of `text`, counted
/// from its characters in one pass without the model's vocabulary: the letters of a word are one
/// token per 6 begun, its digits one per 3 (vocabularies hold few long numbers), and every other
/// visible character (punctuation, symbols, CJK, which such tokenizers split one by one) is one.
/// Words would count a 16 KiB run of punctuation or a line of Chinese as one; the work of scoring
/// them grows with their tokens.
pub fn estimated_tokens(text: &str) -> usize {
    let word = |letters: usize, digits: usize| letters.div_ceil(6) + digits.div_ceil(3);
    let (mut tokens, mut letters, mut digits) = (0, 0, 0);
    for c in text.chars() {
        if c.is_alphanumeric() && !is_cjk(c) {
            if c.is_numeric() {
                digits += 1;
            } else {
                letters += 1;
            }
            continue;
        }
        tokens += word(letters, digits);
        (letters, digits) = (0, 0);
        if !c.is_whitespace() {
            tokens += 1;
        }
    }
    tokens + word(letters, digits)
}

/// Han, kana, hangul and other CJK blocks: tokenizers split these into single characters.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF
        | 0x20000..=0x2FA1F)
}

/// The words of `text` (field `name`), or 413 when there are more than `max`.
fn within_words(text: &str, name: &str, max: usize) -> ApiResult<usize> {
    let words = word_count(text);
    if words > max {
        return Err(ApiError::too_large(format!(
            "`{name}` has {words} words, more than the limit of {max}"
        )));
    }
    Ok(words)
}

/// The bytes of `text` (field `name`), or 413 when there are more than `max`.
fn within_bytes(text: &str, name: &str, max: usize) -> ApiResult<()> {
    if text.len() > max {
        return Err(ApiError::too_large(format!(
            "`{name}` has {} bytes, more than the limit of {max}",
            text.len()
        )));
    }
    Ok(())
}

/// `text` cut to at most `max` bytes (at a character boundary) when `truncate`; `None` when it
/// is longer and truncation was not asked for.
fn fit_bytes(mut text: String, max: usize, truncate: bool) -> Option<String> {
    if text.len() <= max {
        return Some(text);
    }
    if !truncate {
        return None;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    Some(text)
}

/// `text` cut to `max_words` words (from the end with `Left`), or `None` when
/// it is longer and truncation was not asked for.
fn fit_words(
    text: &str,
    max_words: usize,
    truncate: bool,
    direction: TruncationDirection,
) -> Option<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.len() <= max_words {
        return Some(text.to_string());
    }
    if !truncate {
        return None;
    }
    let kept = match direction {
        TruncationDirection::Right => &words[..max_words],
        TruncationDirection::Left => &words[words.len() - max_words..],
    };
    Some(kept.join(" "))
}

impl Served {
    /// A raw score in (0, 1), the score every route reports unless raw scores are asked for:
    /// the calibrated probability that the text answers the query when the model has a
    /// calibration, else the logistic function of the score, as TEI does.
    fn relevance(&self, score: f32) -> f32 {
        let platt = self
            .calibration
            .as_ref()
            .map_or(Platt::IDENTITY, |c| c.platt);
        platt.probability(score) as f32
    }
}

impl AppState {
    /// Under overload, refuse before parsing (shedding must cost less than serving): the queue
    /// of the model asked for says, found from the body's `model` field alone when several are
    /// served (a scan that keeps none of the texts). A body that does not parse is left to the
    /// full parse, which says what is wrong with it.
    fn admits_before_parsing(
        &self,
        deadline: Instant,
        body: &Result<Bytes, BytesRejection>,
    ) -> ApiResult<()> {
        #[derive(Deserialize)]
        struct ModelOnly {
            model: Option<String>,
        }
        let served = match (self.rerankers.as_slice(), body) {
            ([only], _) => only,
            (_, Ok(bytes)) => match serde_json::from_slice::<ModelOnly>(bytes)
                .ok()
                .and_then(|m| self.reranker(m.model.as_deref()).ok())
            {
                Some(served) => served,
                None => return Ok(()),
            },
            (_, Err(_)) => return Ok(()),
        };
        served
            .queue
            .admits(1, deadline)
            .map_err(ApiError::from_batch)
    }

    /// The names of the served reranking models, the default first.
    fn reranker_names(&self) -> Vec<String> {
        self.rerankers.iter().map(|r| r.name.clone()).collect()
    }

    /// The reranking model a request's `model` field asks for: the default when absent, or
    /// when it is one of the default's `--served-model-name`s (any name, when none are set and
    /// one model is served); else the served model of that name, or 404 naming them all.
    fn reranker(&self, asked: Option<&str>) -> ApiResult<&Served> {
        let default = &self.rerankers[0];
        let Some(name) = asked else {
            return Ok(default);
        };
        if let Some(served) = self.rerankers.iter().find(|r| r.name == name) {
            return Ok(served);
        }
        let aliases = &self.limits.served_models;
        if aliases.iter().any(|a| a == name) || (aliases.is_empty() && self.rerankers.len() == 1) {
            return Ok(default);
        }
        let mut names = aliases.clone();
        names.extend(self.reranker_names());
        Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "Validation",
            format!(
                "model `{name}` is not served here; served: {}",
                names.join(", ")
            ),
        ))
    }
}

/// Scores in TEI's form, best first (ties by index); without `raw_scores`, as
/// [`Served::relevance`].
fn ranks(
    served: &Served,
    scores: Vec<f32>,
    texts: &[String],
    raw_scores: bool,
    return_text: bool,
) -> Vec<Rank> {
    let mut ranks: Vec<Rank> = scores
        .into_iter()
        .enumerate()
        .map(|(index, score)| Rank {
            index,
            score: if raw_scores {
                score
            } else {
                served.relevance(score)
            },
            text: return_text.then(|| texts[index].clone()),
        })
        .collect();
    ranks.sort_by(|a, b| ansel_model::best_first(a.score, b.score).then(a.index.cmp(&b.index)));
    ranks
}

/// `/ask`'s body.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct AskRequest {
    #[schema(min_length = 1)]
    question: String,
    /// Answers wanted (1 to the server's limit, 50 by default).
    #[serde(default = "default_top_k")]
    #[schema(default = 5, minimum = 1)]
    top_k: usize,
    /// Time the cascade may take (at most half the server's timeout).
    #[serde(default)]
    budget_ms: Option<u64>,
    /// The retriever for this question (default: the server's `--retriever`); `dense` and
    /// `hybrid` need an index made with vectors (`ansel index --dense`).
    #[serde(default)]
    #[schema(value_type = Option<openapi::Retriever>)]
    retriever: Option<Retrieval>,
    /// Answers whose span is read, best first (when the server has a span reader); 0: none.
    #[serde(default = "default_spans")]
    #[schema(default = 1, minimum = 0)]
    spans: usize,
}

fn default_spans() -> usize {
    ansel_answer::DEFAULT_SPANS
}

fn default_top_k() -> usize {
    5
}

/// `POST /ask`.
#[utoipa::path(
    post,
    path = "/ask",
    tag = "ansel",
    request_body = AskRequest,
    responses((status = 200, description = "The best sentences of the index, best first", body = openapi::AskResponse)),
)]
async fn ask(
    State(state): State<Arc<AppState>>,
    arrival: Option<Extension<Arrival>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let arrival = arrived(arrival);
    let deadline = arrival + state.limits.timeout;
    measured(&state, "/ask", async {
        let limits = &state.limits;
        state
            .ask_queue
            .admits(1, deadline)
            .map_err(ApiError::from_batch)?;
        let request: AskRequest = parse_body(body, limits.max_body_bytes)?;
        if request.question.trim().is_empty() {
            return Err(ApiError::validation("`question` is empty"));
        }
        within_words(&request.question, "question", limits.max_words_per_text)?;
        if request.top_k == 0 || request.top_k > limits.max_top_k {
            return Err(ApiError::validation(format!(
                "`top_k` must be between 1 and {}, found {}",
                limits.max_top_k, request.top_k
            )));
        }
        if let Some(kind) = request.retriever {
            let answerer = &state.answerer;
            if let Err(e) = answerer.retriever.check(kind) {
                // The server's own path is none of the client's business.
                let message = e
                    .to_string()
                    .replace(&format!("{}:", answerer.retriever.source()), "this index");
                return Err(ApiError::validation(format!("`retriever`: {message}")));
            }
        }
        // The cascade stops reranking in time to answer within the limit; the budget counts
        // from the request's arrival, so time spent reading and waiting is already spent.
        let budget = request
            .budget_ms
            .map(Duration::from_millis)
            .unwrap_or(limits.timeout)
            .min(limits.timeout / 2)
            .saturating_sub(arrival.elapsed());
        let job = Ask {
            question: request.question,
            top_k: request.top_k,
            budget: Some(budget),
            retriever: request.retriever,
            spans: request.spans,
        };
        let answers = within_time(deadline, state.ask_queue.submit(job, 1, deadline)).await??;
        let mut reply = serde_json::json!(answers);
        if let Some(calibration) = &state.calibration {
            calibration.annotate(&mut reply, &answers);
        }
        Ok(reply)
    })
    .await
}

#[derive(Serialize, ToSchema)]
struct Health {
    status: &'static str,
    documents: u64,
    sentences: u64,
    retrieve: usize,
    /// The retriever of requests that do not choose one.
    #[schema(value_type = openapi::Retriever)]
    retriever: Retrieval,
    /// The retrievers requests may choose (`dense` and `hybrid` when the index has vectors).
    #[schema(value_type = Vec<openapi::Retriever>)]
    retrievers: Vec<Retrieval>,
    prune_model: Option<String>,
    rerank_model: String,
    /// Every model the reranking routes serve by name, the default first.
    rerank_models: Vec<String>,
    /// The span reader that marks the answer inside each `/ask` answer (none: no spans).
    span_reader: Option<String>,
}

/// `GET /health` (open without the API key).
#[utoipa::path(
    get,
    path = "/health",
    tag = "ansel",
    responses((status = 200, description = "Index counts and the models served", body = Health)),
)]
async fn health(State(state): State<Arc<AppState>>) -> Response {
    measured(&state, "/health", async {
        let stats = state.answerer.retriever.stats().map_err(|e| {
            ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "Unhealthy", e.to_string())
        })?;
        let cascade = &state.answerer.cascade;
        Ok(Health {
            status: "ok",
            documents: stats.documents,
            sentences: stats.sentences,
            retrieve: cascade.retrieve,
            retriever: state.answerer.retriever.default_retrieval(),
            retrievers: if state.answerer.retriever.offers_dense() {
                vec![Retrieval::Bm25, Retrieval::Dense, Retrieval::Hybrid]
            } else {
                vec![Retrieval::Bm25]
            },
            prune_model: cascade.prune.as_ref().map(|(m, _)| m.name().to_string()),
            rerank_model: cascade.rerank.name().to_string(),
            rerank_models: state.reranker_names(),
            span_reader: state
                .answerer
                .reader
                .as_ref()
                .map(|r| r.model().to_string()),
        })
    })
    .await
}

/// `GET /metrics`.
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "ansel",
    responses((status = 200, description = "Prometheus text format", body = String, content_type = "text/plain")),
)]
async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    let stats = state.answerer.retriever.stats().ok();
    let documents = stats.map_or(f64::NAN, |s| s.documents as f64);
    let sentences = stats.map_or(f64::NAN, |s| s.sentences as f64);
    let text = state.metrics.render(&[
        (
            "ansel_index_documents",
            "Documents in the index.",
            documents,
        ),
        (
            "ansel_index_sentences",
            "Sentences in the index.",
            sentences,
        ),
    ]);
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

async fn page() -> Response {
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        include_str!("page.html"),
    )
        .into_response()
}

#[cfg(test)]
mod tests;
