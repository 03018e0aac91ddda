//! The int8 ONNX models committed under `models/` keep their dense weights in 7 bits: with 8 bits
//! ONNX Runtime's VPMADDUBSW path saturates on x86 CPUs without VNNI (the MPNet default scored
//! WikiQA test at MAP 0.41 instead of 0.86 on an AVX2-only EPYC), and on a VNNI machine nothing
//! else would show it.

use ansel_model::ModelCard;
use ansel_onnx::requantize::{dense_weight_level, DENSE_WEIGHT_LEVEL};
use std::path::Path;

#[test]
fn every_committed_int8_model_has_seven_bit_dense_weights() {
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
    let mut checked = Vec::new();
    for entry in std::fs::read_dir(&models).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(card) = ModelCard::read(&dir) else {
            continue;
        };
        if card.kind != ansel_onnx::KIND || card.config["precision"] != "int8" {
            continue;
        }
        let bytes = std::fs::read(dir.join(ansel_onnx::ONNX_FILE)).unwrap();
        let level = dense_weight_level(&bytes).unwrap();
        assert!(
            level > 0 && level <= DENSE_WEIGHT_LEVEL,
            "{}: dense int8 weights reach {level}; run `ansel-lab onnx-requantize --model {}`",
            dir.display(),
            dir.display()
        );
        checked.push(card.name);
    }
    checked.sort();
    assert_eq!(
        checked,
        [
            "minilm-l6-general-distilled-int8",
            "mpnet-base-squad-tanda-int8"
        ],
        "the committed int8 models"
    );
}
