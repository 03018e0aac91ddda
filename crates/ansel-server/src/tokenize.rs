//! TEI's `POST /tokenize`: the tokens the served reranker reads for a text, or for a
//! (query, passage) pair laid out as the model reads it, with their byte offsets.

use crate::{
    arrived, measured, parse_body, within_bytes, within_words, ApiError, AppState, Arrival,
};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use utoipa::ToSchema;

/// A text, a list of texts, or a list mixing texts and `[query, passage]` pairs.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TokenizeRequest {
    inputs: TokenizeInputs,
    /// Add the model's special tokens (`[CLS]`, `[SEP]`, `<s>`, `</s>`) around the text.
    #[serde(default = "yes")]
    #[schema(default = true)]
    add_special_tokens: bool,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize, ToSchema)]
#[serde(untagged)]
pub(crate) enum TokenizeInputs {
    One(String),
    Many(Vec<TokenizeInput>),
}

/// One text, or a `[query, passage]` pair.
#[derive(Deserialize, ToSchema)]
#[serde(untagged)]
pub(crate) enum TokenizeInput {
    Text(String),
    Pair([String; 2]),
}

/// One token, as text-embeddings-inference's `/tokenize` returns it.
#[derive(Serialize, ToSchema)]
pub(crate) struct SimpleToken {
    /// Its id in the model's vocabulary.
    id: u32,
    /// The text it stands for (a special token's own form).
    text: String,
    /// Whether it is a special token added around the text.
    special: bool,
    /// Byte offset of the piece in the text it came from; null for special tokens.
    start: Option<usize>,
    /// Byte offset just past the piece; null for special tokens.
    stop: Option<usize>,
}

/// The inputs as (text, pair) within the request limits: 422 for none, 413 for too many texts
/// or words (the limits of `/rerank`).
fn checked_inputs(
    state: &AppState,
    inputs: TokenizeInputs,
) -> Result<Vec<(String, Option<String>)>, ApiError> {
    let limits = &state.limits;
    let inputs: Vec<(String, Option<String>)> = match inputs {
        TokenizeInputs::One(text) => vec![(text, None)],
        TokenizeInputs::Many(list) => list
            .into_iter()
            .map(|input| match input {
                TokenizeInput::Text(text) => (text, None),
                TokenizeInput::Pair([a, b]) => (a, Some(b)),
            })
            .collect(),
    };
    if inputs.is_empty() {
        return Err(ApiError::validation("`inputs` is empty"));
    }
    if inputs.len() > limits.max_texts {
        return Err(ApiError::too_large(format!(
            "`inputs` has {} inputs, more than the limit of {}",
            inputs.len(),
            limits.max_texts
        )));
    }
    let mut words = 0;
    for (i, (text, pair)) in inputs.iter().enumerate() {
        words += within_words(text, &format!("inputs[{i}]"), limits.max_words_per_text)?;
        within_bytes(text, &format!("inputs[{i}]"), limits.max_text_bytes)?;
        if let Some(pair) = pair {
            words += within_words(pair, &format!("inputs[{i}][1]"), limits.max_words_per_text)?;
            within_bytes(pair, &format!("inputs[{i}][1]"), limits.max_text_bytes)?;
        }
    }
    if words > limits.max_request_words {
        return Err(ApiError::too_large(format!(
            "the request has more than {} words to tokenize; split it",
            limits.max_request_words
        )));
    }
    Ok(inputs)
}

/// `POST /tokenize`.
#[utoipa::path(
    post,
    path = "/tokenize",
    tag = "text-embeddings-inference",
    request_body = TokenizeRequest,
    responses(
        (status = 200, description = "The tokens of each input, in order", body = Vec<Vec<SimpleToken>>),
        (status = 413, description = "Too many inputs, words, bytes or tokens (per input and per request)", body = crate::openapi::ErrorBody),
        (status = 422, description = "Invalid input, or the served model is lexical (no tokens)", body = crate::openapi::ErrorBody),
    ),
)]
pub(crate) async fn tokenize(
    State(state): State<Arc<AppState>>,
    arrival: Option<Extension<Arrival>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let deadline = arrived(arrival) + state.limits.timeout;
    measured(&state, "/tokenize", async {
        let request: TokenizeRequest = parse_body(body, state.limits.max_body_bytes)?;
        let inputs = checked_inputs(&state, request.inputs)?;
        let special = request.add_special_tokens;
        let worker = state.clone();
        // Tokenizing up to the request limits takes milliseconds: off the async threads, and
        // within the request's deadline like every scoring route.
        let job = tokio::task::spawn_blocking(move || {
            let limits = &worker.limits;
            let rerank = &worker.answerer.cascade.rerank;
            let mut total = 0;
            inputs
                .iter()
                .enumerate()
                .map(|(i, (text, pair))| {
                    let tokens = rerank
                        .tokenize(text, pair.as_deref(), special)
                        .ok_or_else(|| {
                            ApiError::validation(format!(
                                "the served model `{}` is lexical: it reads words, not a \
                                 vocabulary's tokens, so there is nothing to tokenize; serve a \
                                 transformer (a cross-encoder) for /tokenize",
                                rerank.name()
                            ))
                        })?
                        .map_err(|e| crate::model_failure(&e))?;
                    // The byte limit bounds the tokens of one input; these bound the response.
                    if tokens.len() > limits.max_tokens_per_text {
                        return Err(ApiError::too_large(format!(
                            "`inputs[{i}]` has {} tokens, more than the limit of {}",
                            tokens.len(),
                            limits.max_tokens_per_text
                        )));
                    }
                    total += tokens.len();
                    if total > limits.max_request_tokens {
                        return Err(ApiError::too_large(format!(
                            "the request has more than {} tokens; split it",
                            limits.max_request_tokens
                        )));
                    }
                    Ok(tokens
                        .into_iter()
                        .map(|t| SimpleToken {
                            id: t.id,
                            text: t.text,
                            special: t.special,
                            start: t.start,
                            stop: t.stop,
                        })
                        .collect())
                })
                .collect::<Result<Vec<Vec<SimpleToken>>, ApiError>>()
        });
        match tokio::time::timeout_at(deadline.into(), job).await {
            Ok(done) => done.map_err(|e| {
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Backend",
                    format!("tokenizer: {e}"),
                )
            })?,
            Err(_) => Err(ApiError::past_deadline()),
        }
    })
    .await
}
