"""What the report scripts share: reading result rows, writing pages atomically, replacing one
section of a page, and the training speed a model's log records.

Report scripts run from the repository root and import it as `from reportlib import ...`
(Python puts the script's own folder on the path).
"""
import json
import os
import random
import statistics


def read_jsonl(path, missing_ok=False):
    """The JSON objects of a JSON lines file, blank lines skipped ([] for a missing file when
    `missing_ok`)."""
    if missing_ok and not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def write_atomic(path, text):
    """Writes `text` to `path` through a temporary file, so that a reader never sees half a page."""
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def replace_section(md_path, heading, section):
    """Replaces the "## " section `heading` of a Markdown file (up to the next "## " heading), or
    appends it when the file has none."""
    text = open(md_path).read() if os.path.exists(md_path) else ""
    if heading in text:
        start = text.index(heading)
        nxt = text.find("\n## ", start + len(heading))
        text = text[:start] + section + ("" if nxt < 0 else "\n" + text[nxt + 1:])
    else:
        text = text.rstrip("\n") + "\n\n" + section
    write_atomic(md_path, text)


def training_rate(log_path):
    """'N pairs/s, H h': the median pairs/s of a train-log.jsonl's steps and its wall-clock hours
    ("" when the log is missing or has no steps)."""
    if not os.path.exists(log_path):
        return ""
    steps = read_jsonl(log_path)
    rates = [s["pairs_per_s"] for s in steps if "pairs_per_s" in s]
    if not rates:
        return ""
    seconds = max((s.get("elapsed_s", 0) for s in steps), default=0)
    return f"{statistics.median(rates):.1f} pairs/s, {seconds / 3600:.2f} h"


def randomization(a, b, rounds=10000, seed=7):
    """Two-sided paired randomization test (sign flips of the per-item differences): the p-value
    of a difference in mean at least as large as the observed one."""
    rng = random.Random(seed)
    d = [x - y for x, y in zip(a, b)]
    obs = abs(sum(d))
    hits = sum(1 for _ in range(rounds) if abs(sum(x if rng.random() < 0.5 else -x for x in d)) >= obs - 1e-12)
    return (hits + 1) / (rounds + 1)
