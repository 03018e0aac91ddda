//! The HTTP routes of `ansel serve` on any request body: every answer is a JSON object with a
//! status below 500. The first byte picks the route.
#![no_main]
use ansel_answer::{Answerer, Cascade};
use ansel_index::{Document, SentenceIndex};
use ansel_server::{app, AppState, Limits};
use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, OnceLock};
use tower::ServiceExt;

struct Served {
    state: Arc<AppState>,
    runtime: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
}

fn served() -> &'static Served {
    static SERVED: OnceLock<Served> = OnceLock::new();
    SERVED.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let index = SentenceIndex::open_or_create(dir.path()).unwrap();
        let mut writer = index.writer().unwrap();
        writer
            .add(&Document {
                id: "bees".into(),
                title: "Bees".into(),
                text: "Bees live in hives. A worker lives six weeks.".into(),
            })
            .unwrap();
        writer.commit().unwrap();
        index.reload().unwrap();
        let rerank = ansel_lexical::from_spec("wo-rr", &[]).unwrap().unwrap();
        let answerer = Answerer {
            index,
            cascade: Cascade {
                retrieve: 10,
                prune: None,
                rerank,
                rerank_chunk: 8,
            },
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        Served {
            state: AppState::new(answerer, Limits::default()),
            runtime,
            _dir: dir,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&route, body)) = data.split_first() else {
        return;
    };
    let uri = if route % 2 == 0 { "/rerank" } else { "/ask" };
    let served = served();
    let request = Request::builder()
        .method("POST")
        .uri(uri)
        // HTTP/1.1 requests need a Host, or the guard answers 400 before the route is reached.
        .header("host", "localhost")
        .header("content-type", "application/json")
        .body(Body::from(body.to_vec()))
        .unwrap();
    let (status, bytes) = served.runtime.block_on(async {
        let response = app(served.state.clone()).oneshot(request).await.unwrap();
        let status = response.status();
        (status, response.into_body().collect().await.unwrap().to_bytes())
    });
    assert!(status.as_u16() < 500 || status.as_u16() == 503, "{status}");
    if !status.is_success() {
        let value: serde_json_value::Value = serde_json_value::from_slice(&bytes).unwrap();
        assert!(value.get("error").is_some(), "{value}");
    }
});
