#!/usr/bin/env python3
"""A span reader (issue 42) trained on one GPU with PyTorch + transformers, on inputs ansel encoded.

The CPU route is `ansel train --model span-extractor` (scripts/train-span-reader.sh). This lab
script trains the same model where a GPU is at hand: the base encoder (a BERT or MPNet directory
ansel reads) with a linear start/end head on its last hidden states, the loss of ansel's trainer
(the mean cross-entropy of the gold start and end among the null answer and the sentence's
selectable tokens), AdamW, linear warm-up and decay, clipping at 1.0 (`cross_encoder_gpu.optimise`).
It reads no text: its inputs are `ansel-lab span-inputs` files (token ids, the selectable tokens'
first and last pieces, the gold span), so the layout is ansel's by construction.

    train    --base DIR --train NAME.jsonl --dev NAME.jsonl --out DIR [--teacher LOGITS.jsonl]
             writes an ansel span-extractor directory (model.safetensors fp16, span_head.safetensors,
             config.json, tokenizer.json, model.json), the weights of the best dev evaluation;
    logits   --model DIR --inputs NAME.jsonl --out LOGITS.jsonl
             each example's start and end logits by sentence token ({"key", "token", "start",
             "end"}; the null answer first), a teacher for another reader;
    margins  --model DIR --inputs NAME.jsonl
             each example's best span and its margin over "no span", as JSON lines (the parity
             check against `ansel eval-reader --predictions`: on the first 200 dev records with
             runs/minilm-l6-squad-span-3, and the first 50 with runs/mpnet-base-squad-span, every
             margin within 6e-5 of ansel's libtorch reader's, CPU, torch 2.5.1, 2026-11-30).

With --teacher, the loss is (1 - alpha) x the gold cross-entropy + alpha x T^2 x the KL divergence
from the teacher's start and end distributions at temperature T, over the sentence tokens both
readers can select (a teacher with another tokenizer lines up by sentence token).
"""
import argparse
import json
import os
import shutil
import sys
import time

import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cross_encoder_gpu as ceg  # noqa: E402

NEG = -1e4


class Example:
    __slots__ = ("key", "ids", "segment", "starts", "ends", "token", "gold", "teacher")

    def __init__(self, line):
        for k in ("key", "ids", "segment", "starts", "ends", "token", "gold"):
            setattr(self, k, line[k])
        self.teacher = None


def read_inputs(path):
    """Examples of an `ansel-lab span-inputs` file and its settings (NAME.json beside it)."""
    meta_path = path[: -len(".jsonl")] + ".json"
    try:
        meta = json.load(open(meta_path))
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"{meta_path}: {e}")
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                out.append(Example(json.loads(line)))
            except (KeyError, json.JSONDecodeError) as e:
                sys.exit(f"{path}:{n}: not a span-inputs line ({e})")
    return out, meta


def attach_teacher(examples, path):
    """The teacher's logits on each example's own selectable tokens (NEG where it has none)."""
    by_key = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            try:
                t = json.loads(line)
                by_key[t["key"]] = t
            except (KeyError, json.JSONDecodeError) as e:
                sys.exit(f"{path}:{n}: not a logits line ({e})")
    missing = 0
    for e in examples:
        t = by_key.get(e.key)
        if t is None:
            missing += 1
            continue
        at = {tok: i for i, tok in enumerate(t["token"])}
        pick = lambda xs: [xs[0]] + [xs[1 + at[tok]] if tok in at else NEG for tok in e.token]  # noqa: E731
        e.teacher = (pick(t["start"]), pick(t["end"]))
    return missing


def batch_tensors(examples, idx, pad, bert, device):
    """Model inputs and, per example, the position of the null answer ([CLS], 0) then of each
    selectable token's first (start) and last (end) piece, with a validity mask."""
    rows = [examples[j] for j in idx]
    width = max(len(r.ids) for r in rows)
    cols = 1 + max(len(r.starts) for r in rows)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    types = torch.zeros((len(rows), width), dtype=torch.long)
    s_idx = torch.zeros((len(rows), cols), dtype=torch.long)
    e_idx = torch.zeros((len(rows), cols), dtype=torch.long)
    valid = torch.zeros((len(rows), cols), dtype=torch.bool)
    for i, r in enumerate(rows):
        ids[i, : len(r.ids)] = torch.tensor(r.ids)
        mask[i, : len(r.ids)] = 1
        types[i, r.segment: len(r.ids)] = 1
        s_idx[i, 1: 1 + len(r.starts)] = torch.tensor(r.starts, dtype=torch.long)
        e_idx[i, 1: 1 + len(r.ends)] = torch.tensor(r.ends, dtype=torch.long)
        valid[i, : 1 + len(r.starts)] = True
    inputs = {"input_ids": ids.to(device), "attention_mask": mask.to(device)}
    if bert:
        inputs["token_type_ids"] = types.to(device)
    return inputs, s_idx.to(device), e_idx.to(device), valid.to(device)


class Reader(torch.nn.Module):
    """The encoder (with its classifier, kept for ansel's loader) and the span head."""

    def __init__(self, base, device):
        super().__init__()
        self.model = ceg.load_base(base, device, without_pooler=True)
        hidden = self.model.config.hidden_size
        self.head = torch.nn.Linear(hidden, 2).to(device)
        torch.nn.init.normal_(self.head.weight, std=0.02)
        torch.nn.init.zeros_(self.head.bias)
        head_file = os.path.join(base, "span_head.safetensors")
        if os.path.exists(head_file):
            h = load_file(head_file)
            self.head.weight.data.copy_(h["span_head.weight"].float())
            self.head.bias.data.copy_(h["span_head.bias"].float())
        self.bert = self.model.config.model_type == "bert"

    def token_logits(self, inputs, s_idx, e_idx, valid, amp):
        with torch.autocast(inputs["input_ids"].device.type, dtype=torch.bfloat16, enabled=amp):
            hidden = self.model.base_model(**inputs).last_hidden_state
        logits = self.head(hidden.float())
        start = logits[..., 0].gather(1, s_idx).masked_fill(~valid, NEG)
        end = logits[..., 1].gather(1, e_idx).masked_fill(~valid, NEG)
        return start, end


def loss_fn(reader, examples, idx, pad, device, amp, alpha, temperature):
    inputs, s_idx, e_idx, valid = batch_tensors(examples, idx, pad, reader.bert, device)
    start, end = reader.token_logits(inputs, s_idx, e_idx, valid, amp)
    gold = [examples[j].gold for j in idx]
    ce = torch.nn.functional.cross_entropy
    loss = (ce(start, torch.tensor([g[0] + 1 if g else 0 for g in gold], device=device))
            + ce(end, torch.tensor([g[1] + 1 if g else 0 for g in gold], device=device))) / 2
    if alpha > 0:
        kd = 0
        for logits, k in ((start, 0), (end, 1)):
            target = torch.full_like(logits, NEG)
            for i, j in enumerate(idx):
                t = examples[j].teacher[k]
                target[i, : len(t)] = torch.tensor(t, device=device)
            p = torch.softmax(target / temperature, dim=1)
            log_q = torch.log_softmax(logits / temperature, dim=1)
            kd = kd + (p * (torch.log(p.clamp_min(1e-12)) - log_q)).sum(1).mean() * temperature ** 2
        loss = (1 - alpha) * loss + alpha * kd / 2
    return loss


def best_span(start, end, max_tokens, token):
    """(a, b, margin) of one example's best span (start[a] + end[b] over its selectable tokens,
    a <= b, at most max_tokens sentence tokens) over the null score (column 0), as ansel's decode
    picks it; None without tokens."""
    null = float(start[0] + end[0])
    best = None
    for a in range(len(token)):
        for b in range(a, len(token)):
            if token[b] + 1 - token[a] > max(max_tokens, 1):
                break
            score = float(start[1 + a] + end[1 + b])
            if best is None or score > best[2]:
                best = (a, b, score)
    return None if best is None else (best[0], best[1], best[2] - null)


@torch.no_grad()
def read_all(reader, examples, pad, device, amp, batch=128):
    """Token logits of every example, in order (lists without padding)."""
    reader.eval()
    order = sorted(range(len(examples)), key=lambda j: len(examples[j].ids))
    out = [None] * len(examples)
    for k in range(0, len(order), batch):
        idx = order[k: k + batch]
        inputs, s_idx, e_idx, valid = batch_tensors(examples, idx, pad, reader.bert, device)
        start, end = reader.token_logits(inputs, s_idx, e_idx, valid, amp)
        for i, j in enumerate(idx):
            n = 1 + len(examples[j].starts)
            out[j] = (start[i, :n].cpu(), end[i, :n].cpu())
    reader.train()
    return out


def evaluate(reader, examples, meta, device, amp):
    """Token-level dev scores: the best span equals the gold span (answer sentences), the span
    is preferred over "no span" exactly on answer sentences (all)."""
    logits = read_all(reader, examples, meta["pad"], device, amp)
    exact = answered = right_choice = 0
    for ex, (start, end) in zip(examples, logits):
        best = best_span(start, end, meta["settings"]["max_answer_tokens"], ex.token)
        if ex.gold:
            answered += 1
            exact += best is not None and (best[0], best[1]) == tuple(ex.gold)
        right_choice += (best is not None and best[2] > 0) == bool(ex.gold)
    return {"token EM": exact / max(answered, 1), "span/no-span accuracy": right_choice / max(len(examples), 1)}


def save(reader, args, meta, summary):
    """An ansel span-extractor directory: the base's files with the trained encoder and head."""
    os.makedirs(args.out, exist_ok=True)
    state = {k: v.detach().half().contiguous().cpu() for k, v in reader.model.state_dict().items()
             if not k.endswith("position_ids")}
    save_file(state, os.path.join(args.out, "model.safetensors"), metadata={"format": "pt"})
    save_file({"span_head.weight": reader.head.weight.detach().float().cpu().contiguous(),
               "span_head.bias": reader.head.bias.detach().float().cpu().contiguous()},
              os.path.join(args.out, "span_head.safetensors"))
    reader.model.config.save_pretrained(args.out)
    shutil.copy(os.path.join(args.base, "tokenizer.json"), args.out)
    base_card = os.path.join(args.base, "model.json")
    bases = [args.base]
    if os.path.exists(base_card):
        bases += json.load(open(base_card)).get("training", {}).get("base", [])
    card = {
        "kind": "span-extractor",
        "name": args.name,
        "ansel_version": "0.1.0",
        "config": meta["settings"],
        "training": {
            "train_data": [meta["data"]],
            "dev_data": summary["dev_data"],
            "hyperparameters": {
                "trainer": "bench/span_reader_gpu.py (PyTorch)", "lr": args.lr, "batch_size": args.batch,
                "epochs": args.epochs, "seconds": args.seconds, "warmup": args.warmup,
                "loss": "mean cross-entropy of the gold start and end token ([CLS] for no span)"
                + (f"; with a teacher: (1 - {args.alpha}) x that + {args.alpha} x T^2 KL at T = {args.temperature}"
                   if args.teacher else ""),
                "teacher": args.teacher, "inputs": "ansel-lab span-inputs", **meta["settings"],
            },
            "seed": args.seed,
            "epochs_completed": args.epochs,
            "best_epoch": None,
            "metrics": {f"dev {k}": v for k, v in summary["best"].items()},
            "train_seconds": summary["seconds"],
            "machine": summary["device"] + ", torch " + summary["torch"],
            "base": bases,
        },
    }
    with open(os.path.join(args.out, "model.json"), "w") as f:
        json.dump(card, f, indent=2)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)


def train(args):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    amp = device.type == "cuda"
    torch.manual_seed(args.seed)
    examples, meta = read_inputs(args.train)
    dev, _ = read_inputs(args.dev)
    if args.dev_examples and len(dev) > args.dev_examples:  # an even sample (the file is in article order)
        dev = dev[:: len(dev) // args.dev_examples][: args.dev_examples]
    if args.teacher:
        missing = attach_teacher(examples, args.teacher)
        examples = [e for e in examples if e.teacher is not None]
        ceg.log("teacher", examples=len(examples), without_logits=missing)
    reader = Reader(args.base, device)
    plan = ceg.batches_of(examples, args.batch, args.epochs, args.seed)
    ceg.log("start", examples=len(examples), dev=len(dev), steps=len(plan), device=str(device))
    best = {"metrics": evaluate(reader, dev, meta, device, amp), "step": 0}
    best_state = {k: v.detach().clone() for k, v in reader.state_dict().items()}
    ceg.log("dev", step=0, **best["metrics"])
    done = {"steps": 0}

    def loss_of(idx):
        done["steps"] += 1
        loss = loss_fn(reader, examples, idx, meta["pad"], device, amp, args.alpha if args.teacher else 0,
                       args.temperature)
        if args.eval_every and done["steps"] % args.eval_every == 0:
            metrics = evaluate(reader, dev, meta, device, amp)
            ceg.log("dev", step=done["steps"], **metrics)
            if metrics["token EM"] > best["metrics"]["token EM"]:
                best.update(metrics=metrics, step=done["steps"])
                best_state.update({k: v.detach().clone() for k, v in reader.state_dict().items()})
        return loss

    phase = ceg.optimise(reader, plan, loss_of, name="span", lr=args.lr, batch=args.batch, epochs=args.epochs,
                         seconds=args.seconds, device=device, warmup=args.warmup)
    final = evaluate(reader, dev, meta, device, amp)
    ceg.log("dev", step=done["steps"], **final)
    if final["token EM"] >= best["metrics"]["token EM"]:
        best.update(metrics=final, step=done["steps"])
    else:
        reader.load_state_dict(best_state)
    summary = {"phase": phase, "best": best["metrics"], "best_step": best["step"], "dev_data": args.dev,
               "seconds": round(time.time() - ceg.START, 1),
               "device": torch.cuda.get_device_name() if amp else "cpu", "torch": torch.__version__}
    save(reader, args, meta, summary)
    ceg.log("done", best_step=best["step"], **best["metrics"])


def open_reader(model_dir, device):
    reader = Reader(model_dir, device)
    card = json.load(open(os.path.join(model_dir, "model.json")))
    return reader, card["config"]


def write_logits(args):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    reader, _ = open_reader(args.model, device)
    examples, meta = read_inputs(args.inputs)
    logits = read_all(reader, examples, meta["pad"], device, device.type == "cuda")
    with open(args.out + ".tmp", "w") as f:
        for ex, (start, end) in zip(examples, logits):
            f.write(json.dumps({"key": ex.key, "token": ex.token, "start": [round(float(x), 4) for x in start],
                                "end": [round(float(x), 4) for x in end]}) + "\n")
    os.replace(args.out + ".tmp", args.out)


def write_margins(args):
    device = torch.device("cpu")
    reader, settings = open_reader(args.model, device)
    examples, meta = read_inputs(args.inputs)
    for ex, (start, end) in zip(examples, read_all(reader, examples, meta["pad"], device, False)):
        best = best_span(start, end, settings["max_answer_tokens"], ex.token)
        print(json.dumps({"key": ex.key, "span": None if best is None else [ex.token[best[0]], ex.token[best[1]] + 1],
                          "margin": None if best is None else round(best[2], 4)}))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train")
    t.add_argument("--base", required=True)
    t.add_argument("--train", required=True)
    t.add_argument("--dev", required=True)
    t.add_argument("--dev-examples", type=int, default=2000)
    t.add_argument("--out", required=True)
    t.add_argument("--name", default="mpnet-base-squad-span")
    t.add_argument("--teacher")
    t.add_argument("--alpha", type=float, default=0.7)
    t.add_argument("--temperature", type=float, default=2.0)
    t.add_argument("--lr", type=float, default=3e-5)
    t.add_argument("--batch", type=int, default=32)
    t.add_argument("--epochs", type=int, default=2)
    t.add_argument("--seconds", type=float, default=0, help="cut the steps to what this allows (0: no cut)")
    t.add_argument("--warmup", type=float, default=0.05)
    t.add_argument("--eval-every", type=int, default=1000)
    t.add_argument("--seed", type=int, default=42)
    g = sub.add_parser("logits")
    g.add_argument("--model", required=True)
    g.add_argument("--inputs", required=True)
    g.add_argument("--out", required=True)
    m = sub.add_parser("margins")
    m.add_argument("--model", required=True)
    m.add_argument("--inputs", required=True)
    args = p.parse_args()
    ceg.START = time.time()
    if args.command == "train":
        os.makedirs(args.out, exist_ok=True)
        ceg.LOG = open(os.path.join(args.out, "train-log.jsonl"), "a")
        train(args)
    elif args.command == "logits":
        write_logits(args)
    else:
        write_margins(args)


if __name__ == "__main__":
    main()
