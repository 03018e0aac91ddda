#!/usr/bin/env python3
"""docs/results/ort-spinning.md from scripts/bench-ort-spinning.sh's rows (ort-spinning.jsonl)."""
import json
import statistics
import sys

SETTING = {"0": "not spinning (`ANSEL_ORT_SPIN=0`)", "1": "spinning during a run (default)"}


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    asks = [r for r in rows if "P@1" in r]
    evals = [r for r in rows if "eval" in r]
    servers = {r["spin"]: r["server"] for r in rows if "server" in r}
    print("# ONNX Runtime's threads spinning during a run\n")
    print("Made by `bash scripts/bench-ort-spinning.sh` (rows in `ort-spinning.jsonl`), the two settings")
    print("alternating in one session on this 2-core machine. ansel's ONNX sessions let their intra-op")
    print("threads spin while a run is in progress and park them when it returns")
    print("(`session.force_spinning_stop`); `ANSEL_ORT_SPIN=0` turns spinning off, as it was before.")
    print("Spinning without parking them made a cascade slower, since one session's idle spinning")
    print("threads took the cores from the next one's run.\n")
    print("## `ask`, one question at a time\n")
    print("`ansel eval-ask` with the default cascade (BM25 16, the distilled MiniLM-L6 keeps 3, the")
    print("MPNet cross-encoder, the span reader on the first answer) over the 22 held-out SQuAD dev")
    print("articles, 500 questions; ms per question end to end; load1: the 1-minute load average")
    print("after the run.\n")
    print("| setting | round | P@1 | span EM | span F1 | p50 ms | p99 ms | load1 |")
    print("|---|---|---|---|---|---|---|---|")
    for r in asks:
        print(f"| {SETTING[r['spin']]} | {r['round']} | {r['P@1']:.3f} | {r['span_EM']:.3f} | "
              f"{r['span_F1']:.3f} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {r['load1']:.2f} |")
    p50 = {s: statistics.median(r["p50_ms"] for r in asks if r["spin"] == s) for s in SETTING}
    print(f"\nMedian of the rounds' p50: {p50['1']:.1f} ms spinning against {p50['0']:.1f} ms not "
          f"(ratio {p50['1'] / p50['0']:.2f}).\n")
    if servers:
        print("## The server under load\n")
        print("`bash scripts/bench-server.sh` (its default models, 8 keep-alive connections on loopback,")
        print("at most 20 s per endpoint, 30 texts per `/rerank`); latencies of the requests answered 200.\n")
        print("| setting | endpoint | requests | 200 OK | 503 shed | p50 ms | p99 ms | 200 OK/s |")
        print("|---|---|---|---|---|---|---|---|")
        for spin, endpoints in servers.items():
            for name, e in endpoints.items():
                print(f"| {SETTING[spin]} | `{name}` | {e['requests']} | {e['ok']} | {e['shed']} | "
                      f"{e['p50_ms']:.1f} | {e['p99_ms']:.1f} | {e['ok_per_s']:.1f} |")
    if evals:
        print("\n## Offline scoring\n")
        print("`ansel eval --data WikiQA-test.tsv --model M` (the questions with a positive), wall seconds")
        print("of the whole command, model loading included; one run of each.\n")
        print("| model | setting | questions | MAP | seconds |")
        print("|---|---|---|---|---|")
        for r in evals:
            print(f"| `{r['eval']}` | {SETTING[r['spin']]} | {r['questions']} | {r['MAP']:.4f} | {r['seconds']:.1f} |")


if __name__ == "__main__":
    main()
