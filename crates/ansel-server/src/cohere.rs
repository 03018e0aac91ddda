//! The reranking APIs clients already speak besides TEI's `/rerank`: Cohere's `/v2/rerank` and
//! `/v1/rerank` (Jina's `/v1/rerank` sends the same body; its clients should send
//! `return_documents`, which Cohere's v1 defaults to false and Jina's to true), and TEI's
//! `GET /info`. Every route scores a model through the same queue, so a pair gets the same
//! `relevance_score` here as its `score` on `/rerank`; a request's `model` picks among the
//! served models (`ansel serve --rerank-model`).

use crate::{
    arrived, measured, parse_body, score_texts, ApiError, ApiResult, AppState, Arrival, Fit,
    TruncationDirection,
};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Extension, State};
use axum::response::Response;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use utoipa::ToSchema;

/// The body of Cohere's `/v2/rerank` and `/v1/rerank` (and Jina's `/v1/rerank`).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct CohereRequest {
    #[serde(default)]
    model: Option<String>,
    #[schema(min_length = 1)]
    query: String,
    /// Strings, or objects with a `text` string (other fields are kept, not ranked).
    #[schema(value_type = Vec<Document>, min_items = 1)]
    documents: Vec<Value>,
    #[serde(default)]
    #[schema(minimum = 1)]
    top_n: Option<usize>,
    #[serde(default)]
    return_documents: bool,
    #[serde(default)]
    #[schema(minimum = 1)]
    max_tokens_per_doc: Option<usize>,
}

/// A document: its text, or an object with a `text` string (other fields ignored).
#[derive(Deserialize, ToSchema)]
#[serde(untagged)]
#[allow(dead_code)] // A schema only: requests read documents as JSON values.
enum Document {
    Text(String),
    Object(DocumentText),
}

#[derive(Serialize, ToSchema)]
struct CohereResponse {
    id: String,
    results: Vec<CohereResult>,
    meta: Meta,
    /// Jina's clients read these two; Cohere's ignore them.
    model: String,
    usage: Usage,
}

#[derive(Serialize, ToSchema)]
struct CohereResult {
    index: usize,
    relevance_score: f32,
    #[serde(skip_serializing_if = "Option::is_none")]
    document: Option<DocumentText>,
}

#[derive(Serialize, Deserialize, ToSchema)]
struct DocumentText {
    text: String,
}

#[derive(Serialize, ToSchema)]
struct Meta {
    api_version: ApiVersion,
    billed_units: BilledUnits,
}

#[derive(Serialize, ToSchema)]
struct ApiVersion {
    version: &'static str,
}

#[derive(Serialize, ToSchema)]
struct BilledUnits {
    search_units: u32,
}

#[derive(Serialize, ToSchema)]
struct Usage {
    total_tokens: usize,
}

/// `POST /v2/rerank`.
#[utoipa::path(
    post,
    path = "/v2/rerank",
    tag = "cohere",
    request_body = CohereRequest,
    responses(
        (status = 200, description = "The best documents first, `top_n` of them", body = CohereResponse),
        (status = 404, description = "A `model` the server does not serve (`serve --rerank-model`, `--served-model-name`); the message names the served ones", body = crate::openapi::ErrorBody),
    ),
)]
pub(crate) async fn rerank_v2(
    state: State<Arc<AppState>>,
    arrival: Option<Extension<Arrival>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    cohere_rerank(state, arrival, body, "/v2/rerank", "2").await
}

/// `POST /v1/rerank` (Cohere's v1 and Jina's bodies).
#[utoipa::path(
    post,
    path = "/v1/rerank",
    tag = "cohere",
    request_body = CohereRequest,
    responses(
        (status = 200, description = "The best documents first, `top_n` of them", body = CohereResponse),
        (status = 404, description = "A `model` the server does not serve (`serve --rerank-model`, `--served-model-name`); the message names the served ones", body = crate::openapi::ErrorBody),
    ),
)]
pub(crate) async fn rerank_v1(
    state: State<Arc<AppState>>,
    arrival: Option<Extension<Arrival>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    cohere_rerank(state, arrival, body, "/v1/rerank", "1").await
}

async fn cohere_rerank(
    State(state): State<Arc<AppState>>,
    arrival: Option<Extension<Arrival>>,
    body: Result<Bytes, BytesRejection>,
    route: &'static str,
    version: &'static str,
) -> Response {
    let deadline = arrived(arrival) + state.limits.timeout;
    measured(&state, route, async {
        state.admits_before_parsing(deadline, &body)?;
        let request: CohereRequest = parse_body(body, state.limits.max_body_bytes)?;
        let served = state.reranker(request.model.as_deref())?;
        // The name asked for is reported back (an alias of the default included).
        let model = request.model.clone().unwrap_or_else(|| {
            (state.limits.served_models.first())
                .cloned()
                .unwrap_or_else(|| served.name.clone())
        });
        let texts = document_texts(&request.documents)?;
        if request.top_n == Some(0) {
            return Err(ApiError::validation("`top_n` must be at least 1"));
        }
        // Cohere cuts long documents instead of refusing them.
        let max_words = request
            .max_tokens_per_doc
            .unwrap_or(usize::MAX)
            .min(state.limits.max_words_per_text);
        if max_words == 0 {
            return Err(ApiError::validation(
                "`max_tokens_per_doc` must be at least 1",
            ));
        }
        let fit = Fit {
            field: "documents",
            truncate: true,
            direction: TruncationDirection::Right,
            max_words,
        };
        let (scores, total_tokens) =
            score_texts(&state, served, deadline, &request.query, &texts, fit).await?;
        let mut results: Vec<CohereResult> = scores
            .into_iter()
            .enumerate()
            .map(|(index, score)| CohereResult {
                index,
                relevance_score: served.relevance(score),
                document: None,
            })
            .collect();
        results.sort_by(|a, b| {
            ansel_model::best_first(a.relevance_score, b.relevance_score)
                .then(a.index.cmp(&b.index))
        });
        results.truncate(request.top_n.unwrap_or(usize::MAX));
        if request.return_documents {
            for result in &mut results {
                result.document = Some(DocumentText {
                    text: texts[result.index].clone(),
                });
            }
        }
        Ok(CohereResponse {
            id: request_id(),
            results,
            meta: Meta {
                api_version: ApiVersion { version },
                billed_units: BilledUnits { search_units: 1 },
            },
            model,
            usage: Usage { total_tokens },
        })
    })
    .await
}

/// The text of each document: a string, or an object's `text` string.
fn document_texts(documents: &[Value]) -> ApiResult<Vec<String>> {
    documents
        .iter()
        .enumerate()
        .map(|(i, document)| match document {
            Value::String(text) => Ok(text.clone()),
            Value::Object(fields) => match fields.get("text") {
                Some(Value::String(text)) => Ok(text.clone()),
                _ => Err(ApiError::validation(format!(
                    "field `documents[{i}]`: a document object needs a `text` string"
                ))),
            },
            _ => Err(ApiError::validation(format!(
                "field `documents[{i}]`: expected a string or an object with a `text` string"
            ))),
        })
        .collect()
}

/// A unique id per response (Cohere's `id`): time and a counter, as hex.
fn request_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    format!(
        "{nanos:016x}-{:08x}",
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// `GET /info`, in TEI's shape; ansel's limits count words, not tokens.
#[derive(Serialize, ToSchema)]
struct Info {
    model_id: String,
    #[schema(value_type = Object)]
    model_type: Value,
    served_model_names: Vec<String>,
    /// Every model the reranking routes serve, by the name a request's `model` gives.
    rerank_models: Vec<String>,
    prune_model: Option<String>,
    max_concurrent_requests: usize,
    max_input_length: usize,
    max_batch_tokens: usize,
    max_batch_requests: usize,
    max_client_batch_size: usize,
    auto_truncate: bool,
    limits_count: &'static str,
    version: &'static str,
    router: &'static str,
}

/// `GET /info`.
#[utoipa::path(
    get,
    path = "/info",
    tag = "text-embeddings-inference",
    responses((status = 200, description = "The model and the limits", body = Info)),
)]
pub(crate) async fn info(State(state): State<Arc<AppState>>) -> Response {
    measured(&state, "/info", async {
        let limits = &state.limits;
        let cascade = &state.answerer.cascade;
        Ok(Info {
            model_id: cascade.rerank.name().to_string(),
            model_type: serde_json::json!({"reranker": {"id2label": {"0": "LABEL_0"}}}),
            served_model_names: limits.served_models.clone(),
            rerank_models: state.reranker_names(),
            prune_model: cascade.prune.as_ref().map(|(m, _)| m.name().to_string()),
            max_concurrent_requests: limits.max_in_flight,
            max_input_length: limits.max_words_per_text,
            max_batch_tokens: limits.max_batch_tokens,
            max_batch_requests: limits.max_batch,
            max_client_batch_size: limits.max_texts,
            auto_truncate: false,
            limits_count: "words",
            version: env!("CARGO_PKG_VERSION"),
            router: "ansel",
        })
    })
    .await
}
