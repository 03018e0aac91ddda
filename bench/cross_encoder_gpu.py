#!/usr/bin/env python3
"""TANDA and distillation for a BERT or MPNet cross-encoder on one GPU (PyTorch + transformers), in
phases under a time budget.

The CPU route is `ansel train` (scripts/train-cross-encoder.sh); this lab script runs the same recipe
(pointwise BCE on a one-logit head over `<s>`, AdamW without decay on biases and LayerNorm, linear
warm-up then decay, gradient clipping at 1.0) where a GPU is at hand, on far more pairs:

  1. transfer on SQuAD-sent training lists (positives, hard in-paragraph and other-article negatives);
  2. adapt the transferred weights on each --adapt mix (e.g. WikiQA train; WikiQA + TrecQA TRAIN-ALL);
  3. keep, of the transferred model and every adapted one, the best by mean dev MAP over --dev sets
     (never a test set), and write it as a Hugging Face *ForSequenceClassification directory
     (`model.safetensors` fp16) with ansel's card, which ansel loads, quantizes and serves.

With --teacher (a teacher's logits for every candidate of the --transfer files, in file order), the
transfer phase distils: its loss is the mean squared error to the teacher's logit, plus
--gold-weight times the BCE on the gold label.

Inputs are ansel JSON lines (`ansel convert`), tokenized exactly as ansel's PairTokenizer does
(`[CLS] q [SEP] c [SEP]` with token types for BERT, `<s> q </s></s> c </s>` for MPNet; the question
keeps at least half of the budget), so training sees what ansel's rankers will feed the model. Each phase's length is
min(its epochs, what --*-seconds allows at the rate measured over its first steps); the plan is
recorded. `reference.json` holds token ids and fp32 logits of a few dev pairs, computed after the
weights were rounded to fp16 as saved, for the parity check on the Rust side.
"""
import argparse
import gzip
import json
import math
import os
import random
import shutil
import sys
import time

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer
from transformers import AutoConfig, AutoModelForSequenceClassification


def log(event, **fields):
    record = {"event": event, "elapsed_s": round(time.time() - START, 1), **fields}
    print(json.dumps(record), flush=True)
    LOG.write(json.dumps(record) + "\n")
    LOG.flush()


def read_questions(path):
    opener = gzip.open if path.endswith(".gz") else open
    out = []
    with opener(path, "rt", encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                q = json.loads(line)
                cands = [(c["text"], c.get("label")) for c in q["candidates"]]
                out.append((q["question"], cands))
            except (KeyError, TypeError, json.JSONDecodeError) as e:
                sys.exit(f"{path}:{n}: not an ansel question line ({e})")
    return out


class PairEncoder:
    """ansel's PairTokenizer::encode with one candidate segment, in the family's pair layout."""

    def __init__(self, tokenizer_json, max_len, model_type):
        self.tok = Tokenizer.from_file(tokenizer_json)
        self.tok.no_truncation()
        self.tok.no_padding()
        self.roberta = model_type != "bert"
        cls, sep, pad = ("<s>", "</s>", "<pad>") if self.roberta else ("[CLS]", "[SEP]", "[PAD]")
        self.cls, self.sep, self.pad = (self.tok.token_to_id(t) for t in (cls, sep, pad))
        self.max_len = max_len
        self.cache = {}

    def pieces(self, texts):
        todo = sorted({t for t in texts if t not in self.cache})
        for i in range(0, len(todo), 20000):
            chunk = todo[i : i + 20000]
            for t, e in zip(chunk, self.tok.encode_batch(chunk, add_special_tokens=False)):
                self.cache[t] = e.ids

    def pair(self, q, c):
        """Token ids and how many of them have token type 0 (BERT; RoBERTa-style: all)."""
        q, c = self.cache[q], self.cache[c]
        budget = max(self.max_len - (4 if self.roberta else 3), 0)
        q_cap = budget - min(len(c), budget // 2)
        q = q[:q_cap]
        c = c[: budget - len(q)]
        if self.roberta:
            ids = [self.cls, *q, self.sep, self.sep, *c, self.sep]
            return ids, len(ids)
        return [self.cls, *q, self.sep, *c, self.sep], len(q) + 2


class Row:
    __slots__ = ("ids", "first", "label", "question", "target")

    def __init__(self, ids, first, label, question, target=None):
        self.ids, self.first, self.label, self.question, self.target = ids, first, label, question, target


def encode_lists(enc, questions, labelled_only=True, targets=None):
    """A Row per candidate (the teacher's logit as its target when `targets` is given)."""
    enc.pieces([q for q, _ in questions] + [c for _, cs in questions for c, _ in cs])
    rows, n = [], 0
    for qi, (q, cands) in enumerate(questions):
        for c, label in cands:
            target = None if targets is None else float(targets[n])
            n += 1
            if label is None and labelled_only and target is None:
                continue
            rows.append(Row(*enc.pair(q, c), float(bool(label)), qi, target))
    if targets is not None and n != len(targets):
        sys.exit(f"the teacher has {len(targets)} logits for {n} candidates")
    return rows


def batches_of(rows, size, epochs, seed):
    """Shuffled batches of similar lengths (chunks of 50 batches sorted by length)."""
    rng = random.Random(seed)
    out = []
    for _ in range(epochs):
        order = list(range(len(rows)))
        rng.shuffle(order)
        chunk = size * 50
        for i in range(0, len(order), chunk):
            part = sorted(order[i : i + chunk], key=lambda j: len(rows[j].ids))
            out += [part[k : k + size] for k in range(0, len(part), size)]
    rng.shuffle(out)
    return out


def collate(rows, idx, enc, device):
    """Model inputs (token types for BERT), gold labels and teacher targets of rows `idx`."""
    width = max(len(rows[j].ids) for j in idx)
    ids = torch.full((len(idx), width), enc.pad, dtype=torch.long)
    types = torch.zeros((len(idx), width), dtype=torch.long)
    for r, j in enumerate(idx):
        ids[r, : len(rows[j].ids)] = torch.tensor(rows[j].ids)
        types[r, rows[j].first : len(rows[j].ids)] = 1
    inputs = {"input_ids": ids.to(device, non_blocking=True), "attention_mask": (ids != enc.pad).to(device)}
    if not enc.roberta:
        inputs["token_type_ids"] = types.to(device, non_blocking=True)
    labels = torch.tensor([rows[j].label for j in idx]).to(device)
    targets = None
    if rows[idx[0]].target is not None:
        targets = torch.tensor([rows[j].target for j in idx]).to(device)
    return inputs, labels, targets


def logits_of(model, inputs, amp):
    with torch.autocast(inputs["input_ids"].device.type, dtype=torch.bfloat16, enabled=amp):
        return model(**inputs).logits.squeeze(-1).float()


@torch.no_grad()
def score(model, rows, enc, device, amp, batch=256):
    model.eval()
    order = sorted(range(len(rows)), key=lambda j: len(rows[j].ids))
    out = np.zeros(len(rows), dtype=np.float32)
    for i in range(0, len(order), batch):
        idx = order[i : i + batch]
        inputs, _, _ = collate(rows, idx, enc, device)
        out[idx] = logits_of(model, inputs, amp).cpu().numpy()
    model.train()
    return out


def list_metrics(rows, scores):
    """MAP, MRR, P@1 over questions with a positive and a negative (ties broken by input order)."""
    by_q = {}
    for row, s in zip(rows, scores):
        by_q.setdefault(row.question, []).append((-s, len(by_q.get(row.question, [])), row.label))
    aps, rrs, p1 = [], [], []
    for items in by_q.values():
        labels = [lab for _, _, lab in sorted(items)]
        if not any(labels) or all(labels):
            continue
        hits, ap = 0, 0.0
        for rank, lab in enumerate(labels, 1):
            if lab:
                hits += 1
                ap += hits / rank
        aps.append(ap / hits)
        rrs.append(1 / (labels.index(1.0) + 1))
        p1.append(labels[0])
    n = len(aps)
    return {"MAP": sum(aps) / n, "MRR": sum(rrs) / n, "P@1": sum(p1) / n, "questions": n}


def evaluate(model, devs, enc, device, amp):
    result = {}
    for name, rows in devs.items():
        result[name] = list_metrics(rows, score(model, rows, enc, device, amp))
    result["mean MAP"] = sum(r["MAP"] for r in result.values()) / len(devs)
    return result


def train_phase(model, rows, *, name, lr, batch, epochs, seconds, seed, enc, device, amp, gold_weight=1.0):
    """One phase; its step count is cut to what `seconds` allows at the measured rate."""
    torch.manual_seed(seed)
    plan = batches_of(rows, batch, epochs, seed)
    bce, mse = torch.nn.BCEWithLogitsLoss(), torch.nn.MSELoss()

    def loss_of(idx):
        inputs, labels, targets = collate(rows, idx, enc, device)
        logits = logits_of(model, inputs, amp)
        if targets is None:
            return bce(logits, labels)
        return mse(logits, targets) + gold_weight * bce(logits, labels)

    return optimise(model, plan, loss_of, name=name, lr=lr, batch=batch, epochs=epochs, seconds=seconds,
                    device=device, warmup=0.1)


def optimise(model, plan, loss_of, *, name, lr, batch, epochs, seconds, device, warmup):
    """AdamW (no decay on biases and LayerNorm) over the batches of `plan`, `loss_of(batch)` each,
    linear warm-up over `warmup` of the steps then linear decay, gradients clipped at 1.0; the
    step count is cut to what `seconds` allows at the rate measured over steps 50-150."""
    decay = [p for n, p in model.named_parameters() if p.requires_grad and p.ndim > 1]
    no_decay = [p for n, p in model.named_parameters() if p.requires_grad and p.ndim <= 1]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
        lr=lr,
        fused=device.type == "cuda",
    )
    state = {"total": len(plan), "warmup": max(1, int(warmup * len(plan)))}

    def factor(step):
        if step < state["warmup"]:
            return (step + 1) / state["warmup"]
        return max(0.0, (state["total"] - step) / max(1, state["total"] - state["warmup"]))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    model.train()
    t0, timed_from, losses, step = time.time(), None, [], 0
    while step < state["total"]:
        loss = loss_of(plan[step])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.detach())
        step += 1
        # The rate is timed after the first steps (CUDA start-up, new batch shapes), which ran
        # 3x slower than later ones on an H100: timed from step 10 the plan came out far short.
        if step == 50:
            timed_from = time.time()
        if step == 150 and seconds:
            per_step = (time.time() - timed_from) / 100
            fits = max(step, int((seconds - (time.time() - t0)) / per_step) + step)
            if fits < state["total"]:
                state["total"] = fits
                state["warmup"] = max(1, int(warmup * fits))
            log("plan", phase=name, steps=state["total"], of=len(plan), seconds_per_step=per_step)
        if step % 200 == 0 or step == state["total"]:
            pairs_s = batch * step / (time.time() - t0)
            log("step", phase=name, step=step, loss=torch.stack(losses).mean().item(), lr=sched.get_last_lr()[0],
                pairs_per_s=round(pairs_s, 1))
            losses = []
    took = time.time() - t0
    return {"phase": name, "steps": step, "planned": len(plan), "pairs": step * batch, "batch": batch,
            "lr": lr, "epochs": epochs, "seconds": round(took, 1), "pairs_per_s": round(step * batch / took, 1)}


def load_base(base, device, without_pooler=False):
    """The base encoder with a one-logit head. ansel's cross-encoder starts its head from the
    encoder's pooler: BERT keeps it under its own name, MPNet's classifier.dense takes it.
    `without_pooler`: a base that may lack the pooler (a span reader's graph has none; the
    pooler and the head are then fresh and unused)."""
    config = AutoConfig.from_pretrained(base)
    config.num_labels = 1
    model = AutoModelForSequenceClassification.from_config(config)
    prefix = model.base_model_prefix
    weights = load_file(os.path.join(base, "model.safetensors"))
    mapped = {}
    for k, v in weights.items():
        if k.endswith("position_ids"):
            continue
        if k.startswith(f"{prefix}.") or k.startswith("classifier."):
            mapped[k] = v.float()
        elif k.startswith("pooler.dense.") and config.model_type == "mpnet":
            mapped["classifier.dense." + k[len("pooler.dense."):]] = v.float()
        else:
            mapped[f"{prefix}.{k}"] = v.float()
    missing, unexpected = model.load_state_dict(mapped, strict=False)
    fresh = ("classifier.out_proj.", "classifier.weight", "classifier.bias")
    if without_pooler:
        fresh += (f"{prefix}.pooler.", "classifier.dense.")
    missing = [m for m in missing if not m.startswith(fresh)]
    if missing or unexpected:
        sys.exit(f"{base}: weights do not fit {type(model).__name__}: missing {missing}, "
                 f"unexpected {unexpected}")
    return model.to(device)


def write_card(args, summary, best):
    """ansel's model card (model.json) for the kept weights: kind cross-encoder, pair input."""
    kept = best["phases"]
    train_data = ([args.transfer] if args.transfer else []) + (
        [dict(a.split("=", 1) for a in args.adapt)[best["name"]]] if best["name"] != "transfer" else [])
    metrics = {}
    for name, m in best["dev"].items():
        if name == "mean MAP":
            metrics["dev mean MAP"] = m
            continue
        for key in ("MAP", "MRR", "P@1"):
            metrics[f"dev {name} {key}"] = m[key]
    card = {
        "kind": "cross-encoder",
        "name": args.name,
        "ansel_version": "0.1.0",
        "config": {"input": "pair", "max_len": args.max_len, "batch_size": 32},
        "training": {
            "train_data": train_data,
            "dev_data": " ".join(args.dev),
            "hyperparameters": {
                "trainer": "bench/cross_encoder_gpu.py (PyTorch, transformers *ForSequenceClassification)",
                "teacher": args.teacher,
                "gold_weight": args.gold_weight if args.teacher else None,
                "phases": kept,
                "candidates_compared_on_dev": [p["phase"] for p in summary["phases"]],
                "chosen_by": "mean dev MAP over the dev sets",
                "loss": "MSE to the teacher's logit + gold_weight x BCE" if args.teacher else "pointwise BCE",
                "optimizer": "AdamW (weight decay 0.01; none on biases and LayerNorm)",
                "schedule": "linear warm-up over 0.1 of a phase's steps, then linear decay to 0",
                "max_grad_norm": 1.0,
                "precision": "bf16 autocast, fp32 master weights; saved fp16",
                "max_len": args.max_len,
                "frozen_word_embeddings": args.freeze_word_embeddings,
                **dict(d.split("=", 1) for d in args.describe),
            },
            "seed": args.seed,
            "epochs_completed": 1,
            "best_epoch": None,
            "metrics": metrics,
            "train_seconds": sum(p["seconds"] for p in kept),
            "machine": summary["device"] + ", torch " + summary["torch"],
            "base": [args.base],
        },
    }
    with open(os.path.join(args.out, "model.json"), "w") as f:
        json.dump(card, f, indent=2)


def score_files(argv):
    """`score MODEL OUT_DIR FILE...`: a trained model's logits for every candidate of each file, in
    file order, as OUT_DIR/<file name>.npy (fp16): the teacher's side of --teacher."""
    model_dir, out_dir, *files = argv
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = AutoModelForSequenceClassification.from_pretrained(model_dir).float().to(device)
    enc = PairEncoder(os.path.join(model_dir, "tokenizer.json"), json.load(open(os.path.join(
        model_dir, "model.json")))["config"]["max_len"], model.config.model_type)
    os.makedirs(out_dir, exist_ok=True)
    for f in files:
        rows = encode_lists(enc, read_questions(f), labelled_only=False)
        logits = score(model, rows, enc, device, device.type == "cuda", batch=512)
        name = os.path.basename(f).split(".")[0] + ".npy"
        np.save(os.path.join(out_dir, name), logits.astype(np.float16))
        print(f"{f}: {len(logits)} logits -> {os.path.join(out_dir, name)}", flush=True)


def main():
    if sys.argv[1:2] == ["score"]:
        return score_files(sys.argv[2:])
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base", required=True, help="Hugging Face BERT or MPNet directory (config, tokenizer, weights)")
    p.add_argument("--transfer", help="FILE[+FILE...]: transfer lists (ansel JSON lines); without it, "
                   "each --adapt mix starts from the base (adapting alone, TANDA's FT baseline)")
    p.add_argument("--teacher", help="SCORES[+SCORES...]: .npy logits of a teacher, one per --transfer file")
    p.add_argument("--gold-weight", type=float, default=1.0, help="weight of the gold BCE when distilling")
    p.add_argument("--describe", action="append", default=[], metavar="KEY=TEXT",
                   help="recorded on the card's hyperparameters (e.g. what the mixture and the teacher are)")
    p.add_argument("--adapt", action="append", default=[],
                   help="NAME=FILE[+FILE...]: an adapt mix (repeatable)")
    p.add_argument("--dev", action="append", required=True, help="NAME=FILE: a dev set (repeatable)")
    p.add_argument("--out", required=True)
    p.add_argument("--name", default="mpnet-base-squad-tanda", help="the model card's name")
    p.add_argument("--max-len", type=int, default=128)
    p.add_argument("--transfer-batch", type=int, default=64)
    p.add_argument("--transfer-lr", type=float, default=3e-5)
    p.add_argument("--transfer-epochs", type=int, default=1)
    p.add_argument("--transfer-seconds", type=float, default=300)
    p.add_argument("--adapt-batch", type=int, default=32)
    p.add_argument("--adapt-lr", type=float, default=1e-5)
    p.add_argument("--adapt-epochs", type=int, default=2)
    p.add_argument("--adapt-seconds", type=float, default=60)
    p.add_argument("--freeze-word-embeddings", action="store_true",
                   help="keep the word-embedding table as the base has it (and leave it out of the output)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--resume", action="store_true", help="start from --out's transfer checkpoint when it has one")
    p.add_argument("--reference-pairs", type=int, default=16)
    args = p.parse_args()
    if any("=" not in d for d in args.describe):
        p.error("--describe takes KEY=TEXT")

    global START, LOG
    START = time.time()
    os.makedirs(args.out, exist_ok=True)
    LOG = open(os.path.join(args.out, "train-log.jsonl"), "a")
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    amp = device.type == "cuda"
    torch.backends.cuda.matmul.allow_tf32 = True
    log("start", args=vars(args), device=torch.cuda.get_device_name() if amp else "cpu",
        torch=torch.__version__)

    model_type = AutoConfig.from_pretrained(args.base).model_type
    enc = PairEncoder(os.path.join(args.base, "tokenizer.json"), args.max_len, model_type)
    if not args.transfer and not args.adapt:
        sys.exit("nothing to train: give --transfer, --adapt or both")
    files = args.transfer.split("+") if args.transfer else []
    teachers = args.teacher.split("+") if args.teacher else [None] * len(files)
    if len(teachers) != len(files):
        sys.exit(f"--teacher names {len(teachers)} score files for {len(files)} --transfer files")
    transfer = [r for f, t in zip(files, teachers)
                for r in encode_lists(enc, read_questions(f), targets=None if t is None else np.load(t))]
    adapts = {}
    for spec in args.adapt:
        name, files = spec.split("=", 1)
        adapts[name] = [r for f in files.split("+") for r in encode_lists(enc, read_questions(f))]
    devs = {}
    for spec in args.dev:
        name, f = spec.split("=", 1)
        devs[name] = encode_lists(enc, read_questions(f))
    log("data", transfer_pairs=len(transfer), adapt_pairs={k: len(v) for k, v in adapts.items()},
        dev_pairs={k: len(v) for k, v in devs.items()})

    model = load_base(args.base, device)
    if args.freeze_word_embeddings:
        model.base_model.embeddings.word_embeddings.weight.requires_grad_(False)
    checkpoint = os.path.join(args.out, "transfer-checkpoint.safetensors")
    if not args.transfer:
        phases = []
    elif args.resume and os.path.exists(checkpoint):
        # The transfer phase is the long one: a rerun with --resume starts at the adapt phases.
        model.load_state_dict(load_file(checkpoint, device=str(device)), strict=False)
        with open(checkpoint + ".json") as f:
            phases = [json.load(f)]
        log("resumed", checkpoint=checkpoint)
    else:
        phases = [train_phase(model, transfer, name="transfer", lr=args.transfer_lr, batch=args.transfer_batch,
                              epochs=args.transfer_epochs, seconds=args.transfer_seconds, seed=args.seed, enc=enc,
                              device=device, amp=amp, gold_weight=args.gold_weight)]
        save_file({k: v.contiguous() for k, v in model.state_dict().items() if not k.endswith("position_ids")},
                  checkpoint + ".tmp")
        os.replace(checkpoint + ".tmp", checkpoint)
        with open(checkpoint + ".json", "w") as f:
            json.dump(phases[0], f)
    best = None
    if args.transfer:
        best = {"name": "transfer", "dev": evaluate(model, devs, enc, device, amp), "phases": list(phases)}
        log("dev", candidate="transfer", **best["dev"])
    transferred = {k: v.detach().clone() for k, v in model.state_dict().items()}
    best_state = transferred
    for name, rows in adapts.items():
        model.load_state_dict(transferred)
        phase = train_phase(model, rows, name=f"adapt {name}", lr=args.adapt_lr, batch=args.adapt_batch,
                            epochs=args.adapt_epochs, seconds=args.adapt_seconds, seed=args.seed,
                            enc=enc, device=device, amp=amp)
        phases.append(phase)
        dev = evaluate(model, devs, enc, device, amp)
        log("dev", candidate=name, **dev)
        if best is None or dev["mean MAP"] > best["dev"]["mean MAP"]:
            best = {"name": name, "dev": dev, "phases": ([phases[0]] if args.transfer else []) + [phase]}
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}

    # Round to fp16 as saved, so the reference logits are those of the weights ansel reads.
    model.load_state_dict({k: v.half().float() for k, v in best_state.items()})
    tensors = {k: v.detach().half().contiguous().cpu() for k, v in model.state_dict().items()
               if not k.endswith("position_ids")}
    save_file(tensors, os.path.join(args.out, "model.safetensors"), metadata={"format": "pt"})
    model.config.save_pretrained(args.out)
    shutil.copy(os.path.join(args.base, "tokenizer.json"), args.out)

    rows = devs[next(iter(devs))][: args.reference_pairs]
    model.eval()
    torch.backends.cuda.matmul.allow_tf32 = False
    ref = score(model, rows, enc, device, amp=False, batch=len(rows))
    with open(os.path.join(args.out, "reference.json"), "w") as f:
        json.dump({"pairs": [{"ids": r.ids, "logit": float(s)} for r, s in zip(rows, ref)]}, f)
    summary = {"chosen": best["name"], "dev": best["dev"], "phases": phases, "kept_phases": best["phases"],
               "seconds": round(time.time() - START, 1), "max_len": args.max_len, "seed": args.seed,
               "frozen_word_embeddings": args.freeze_word_embeddings,
               "device": torch.cuda.get_device_name() if amp else "cpu", "torch": torch.__version__}
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    write_card(args, summary, best)
    log("done", chosen=best["name"], mean_dev_map=best["dev"]["mean MAP"])


if __name__ == "__main__":
    main()
