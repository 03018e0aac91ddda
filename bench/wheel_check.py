"""The light wheel (no libtorch) in a fresh environment, run from outside the checkout
(scripts/build-wheels.sh): the default model (the full build's: the general reranker, an int8 ONNX
cross-encoder fused with an int8 ONNX sentence encoder), the
efficient networks (their native forward pass) and another int8 ONNX cross-encoder score as
`ansel rank` does (ONNX Runtime 1.31.1 in both), and a libtorch cross-encoder is refused with a way
out.

    python bench/wheel_check.py REPO ONNX_MODEL_DIR
"""
import json
import subprocess
import sys

import ansel

repo, onnx_model = sys.argv[1], sys.argv[2]
assert "/site-packages/" in ansel.__file__, ansel.__file__
r = ansel.Ranker()
assert r.model == "mpnet-base-general", r.model
ranked = r.rank("How tall is the tower?", ["Grass is green.", "The tower is 330 metres tall."])
assert ranked[0][0] == 1, ranked
print("default model without libtorch:", r.model, ranked)
try:
    ansel.Ranker(f"{repo}/models/minilm-l6-wikiqa")
    raise SystemExit("a libtorch model loaded without libtorch")
except ansel.AnselError as e:
    assert "ansel quantize" in str(e), e
    print("libtorch model refused:", e)
sample = f"{repo}/examples/sample-questions.jsonl"


def largest_difference(ranker, spec):
    """The largest difference between the wheel's scores and `ansel rank`'s on the sample."""
    want = [json.loads(line) for line in subprocess.run(
        [f"{repo}/target/release/ansel", "rank", "--data", sample, "--model", spec],
        capture_output=True, text=True, check=True).stdout.splitlines()]
    worst = 0.0
    for line, q in zip(want, map(json.loads, open(sample))):
        texts = [c["text"] for c in q["candidates"]]
        got = ranker.score(q["question"], texts, in_document_order=True)
        worst = max(worst, max(abs(a - s["score"]) for a, s in zip(got, line["scores"])))
    return worst


efficient = "wo-rr+cosinenet-wikiqa-distilled+compare-aggregate-wikiqa"
for name, ranker, spec in [("default model", r, r.model),
                           ("efficient networks", ansel.Ranker(efficient), efficient),
                           ("int8 ONNX model", ansel.Ranker(onnx_model), onnx_model)]:
    worst = largest_difference(ranker, spec)
    assert worst < 1e-5, (name, worst)
    print(f"{name}: scores equal ansel rank's (largest difference {worst:.2e})")
