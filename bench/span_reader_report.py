"""Renders docs/results/span-reader.md from the rows of scripts/bench-span-reader.sh."""
import json
import sys


def f(x, digits=3):
    return "—" if x is None else f"{x:.{digits}f}"


rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
readers = [r for r in rows if "sentence_EM" in r]
asks = [r for r in rows if "P@1" in r]
print("# Span reader: the answer inside the answer sentence")
print()
print("Made by `bash scripts/bench-span-reader.sh` (rows in `span-reader.jsonl`; the reader by")
print("`bash scripts/train-span-reader.sh`). Dev records and dev questions chose everything")
print("(the training steps kept, the calibration); test rows are reported only.")
print()
print("## Given the gold sentence and the gold paragraph")
print()
print("Records of held-out SQuAD articles (`ansel-lab squad-spans`; 1000, an even sample). *Sentence*:")
print("the best span of the answer sentence, read between its neighbours. *Paragraph*: every sentence")
print("of the paragraph read, the span with the largest margin over \"no span\" wins. *No-span")
print("accuracy*: over the answer sentences and one no-answer sentence per record, how often the")
print("reader prefers a span exactly on the answer sentences. With each reader's own calibration")
print("(fitted on the dev records): *ECE* of the probability that the span is exactly the answer (10")
print("bins; the readings sampled to the share of answer sentences the calibration was fitted for,")
print("ask's P@1, where it records one), and the share of answer / no-answer sentences whose span is")
print("shown (above the threshold). Cost: mean ms per sentence read, one at a time, on this machine.")
print()
print("| reader | records | sentence EM | sentence F1 | paragraph EM | paragraph F1 | no-span accuracy | ECE | shown: answer / no-answer | ms / reading |")
print("|---|---|---|---|---|---|---|---|---|---|")
for r in readers:
    shown = ("—" if r.get("shown_on_answer_sentences") is None
             else f"{r['shown_on_answer_sentences']:.2f} / {r['shown_on_no_answer_sentences']:.2f}")
    print(f"| {r['row']} | {r['records']} | {f(r['sentence_EM'])} | {f(r['sentence_F1'])} | "
          f"{f(r['paragraph_EM'])} | {f(r['paragraph_F1'])} | {f(r['span_no_span_accuracy'])} | "
          f"{f(r.get('ece'))} | {shown} | {f(r['ms_per_reading'], 2)} |")
print()
print("## End to end: `ask` over an index of held-out articles")
print()
def cascade(r):
    prune = f" → {r['prune_model']} keeps {r['keep']}" if r.get("prune_model") else ""
    return f"{r['retriever']} {r['retrieve']}{prune} → {r['model']}"


cascades = sorted({cascade(r) for r in asks})
print(f"`ansel eval-ask` with the default cascade ({'; '.join(cascades)}) over the index of the")
print("22 held-out articles of the split, 500 questions each; *span EM / F1*: the first answer's span")
print("against the expected answer (no span scores 0); *spans*: questions whose first answer got one.")
print("p50 / p99 are end to end per question, reader on and off measured in the same session.")
print()
print("| run | questions | P@1 | span EM | span F1 | spans | p50 ms | p99 ms |")
print("|---|---|---|---|---|---|---|---|")
for r in asks:
    print(f"| {r['row']} | {r['questions']} | {f(r['P@1'])} | {f(r.get('span_EM'))} | "
          f"{f(r.get('span_F1'))} | {r.get('spans', '—')} | {f(r['p50_ms'], 1)} | {f(r['p99_ms'], 1)} |")
