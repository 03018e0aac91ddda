//! Without libonnxruntime.so the error says where it looked and which script fetches it.
//! (Its own test binary: the library is loaded once per process.)

#[test]
fn a_missing_library_names_the_path_and_the_fetch_script() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("libonnxruntime.so");
    std::env::set_var(ansel_onnx::DYLIB_ENV, &path);
    let err = ansel_onnx::runtime_library().unwrap_err().to_string();
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(err.contains(ansel_onnx::FETCH_SCRIPT), "{err}");

    // A model directory cannot load either, and says why.
    let dir = tmp.path().join("m");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("tokenizer.json"),
        ansel_bert::testing::tiny_tokenizer_json(),
    )
    .unwrap();
    let card = ansel_model::ModelCard::new(
        ansel_onnx::KIND,
        "m",
        serde_json::json!({"input": "pair", "max_len": 32, "batch_size": 2, "precision": "int8",
                           "scheme": "", "source": "", "source_name": "", "opset": 17}),
    );
    let err = ansel_onnx::OnnxRanker::load(&dir, &card)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains(ansel_onnx::FETCH_SCRIPT), "{err}");
}
