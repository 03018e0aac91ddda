"""Writes docs/results/calibration.md from the rows of scripts/bench-calibration.sh."""
import re
import sys

from reportlib import read_jsonl, write_atomic

rows, out = sys.argv[1], sys.argv[2]
lines = [
    "# Calibration and abstention",
    "",
    "Produced by `bash scripts/bench-calibration.sh` (`MODELS=...`; rows in `calibration.jsonl`,",
    "`REPORT_ONLY=1` rewrites this page). `ansel calibrate` fits Platt scaling (`p = sigmoid(a s + b)`",
    "of the model's raw score `s`) on every WikiQA dev pair and chooses the abstention threshold on dev",
    "by answer-triggering F1 (Yang et al. 2015: a question is answered when its best candidate's",
    "probability reaches the threshold; precision = answered right / answered, recall = answered right",
    "/ questions with an answer). Test rows are WikiQA test, all 633 questions (390 have no answer",
    "among their candidates), scored with what dev chose. ECE: expected calibration error over 10",
    "equal-width bins of all test pairs, for the logistic function of the raw score (what `/rerank`",
    "returns without `raw_scores`) and for the fitted probabilities. `a+b` fusions sum z-scores",
    "within the question, so their best candidate's score says little about whether it answers.",
    "",
    "| model | a, b | ECE test: logistic / fitted | threshold | answer P / R / F1 (test) | abstain P / R (test) | answered (test) |",
    "|---|---|---|---|---|---|---|",
]
for r in read_jsonl(rows):
    t = r["test"]
    safe = re.sub(r"[^A-Za-z0-9_.\-]", "_", r["model"])
    lines.append(
        f"| `{r['model']}` ([diagram](calibration/{safe}.svg)) | {r['platt']['a']:.3f}, {r['platt']['b']:.3f} "
        f"| {t['ece_logistic']:.3f} / **{t['ece']:.3f}** | {r['abstain_below']:.3f} "
        f"| {t['answer_precision']:.3f} / {t['answer_recall']:.3f} / **{t['answer_f1']:.3f}** "
        f"| {t['abstain_precision']:.3f} / {t['abstain_recall']:.3f} | {t['answered']} of {t['questions']} |"
    )
lines += [
    "",
    "Dev rows (what chose the threshold) are in `calibration.jsonl` under `dev`.",
    "",
]
write_atomic(out, "\n".join(lines))
