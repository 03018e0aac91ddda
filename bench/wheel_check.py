"""The light wheel (no libtorch) in a fresh environment, run from outside the checkout
(scripts/build-wheels.sh): the default model scores, a libtorch model is refused with a way out,
and an int8 ONNX cross-encoder scores as `ansel rank` does (both ONNX Runtime 1.31.1).

    python bench/wheel_check.py REPO ONNX_MODEL_DIR
"""
import json
import subprocess
import sys

import ansel

repo, onnx_model = sys.argv[1], sys.argv[2]
assert "/site-packages/" in ansel.__file__, ansel.__file__
r = ansel.Ranker()
ranked = r.rank("How tall is the tower?", ["Grass is green.", "The tower is 330 metres tall."])
assert ranked[0][0] == 1, ranked
print("default model without libtorch:", r.model, ranked)
try:
    ansel.Ranker(f"{repo}/models/cosinenet-wikiqa")
    raise SystemExit("a libtorch model loaded without libtorch")
except ansel.AnselError as e:
    assert "ansel quantize" in str(e), e
    print("libtorch model refused:", e)
sample = f"{repo}/examples/sample-questions.jsonl"
want = [json.loads(line) for line in subprocess.run(
    [f"{repo}/target/release/ansel", "rank", "--data", sample, "--model", onnx_model],
    capture_output=True, text=True, check=True).stdout.splitlines()]
onnx = ansel.Ranker(onnx_model)
worst = 0.0
for line, q in zip(want, map(json.loads, open(sample))):
    got = onnx.score(q["question"], [c["text"] for c in q["candidates"]], in_document_order=True)
    worst = max(worst, max(abs(a - s["score"]) for a, s in zip(got, line["scores"])))
assert worst < 1e-5, worst
print(f"int8 ONNX model: scores equal ansel rank's (largest difference {worst:.2e})")
