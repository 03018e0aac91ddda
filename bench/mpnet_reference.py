"""Reference values for crates/ansel-bert/tests/mpnet_reference.rs: token ids and mean-pooled
embeddings of all-mpnet-base-v2 by Hugging Face transformers (bench/.venv, torch 2.13.0,
transformers 4.57.6). Usage: bench/.venv/bin/python bench/mpnet_reference.py vendor/models/all-mpnet-base-v2"""
import sys

import torch
from transformers import AutoModel, AutoTokenizer

SENTENCE = "The quick brown fox jumps over the lazy dog near Wikipédia's headquarters."
LONG = " ".join(f"word{i % 17} and the number {i}." for i in range(40))
QUESTION, ANSWER = "who wrote hamlet?", "It was written by William Shakespeare in 1600."

base = sys.argv[1]
tok = AutoTokenizer.from_pretrained(base)
model = AutoModel.from_pretrained(base).eval()
print("ids", tok(SENTENCE)["input_ids"])
print("pair", tok(QUESTION, ANSWER)["input_ids"])
for name, text in [("sentence", SENTENCE), ("long", LONG)]:
    enc = tok(text, return_tensors="pt", truncation=True, max_length=512)
    with torch.no_grad():
        hidden = model(**enc).last_hidden_state[0]
    mean = hidden.mean(0)
    print(name, "tokens", enc["input_ids"].shape[1])
    print(name, "first8", [round(v, 6) for v in mean[:8].tolist()])
    print(name, "norm", round(mean.norm().item(), 6))
