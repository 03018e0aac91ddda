#!/usr/bin/env python3
"""`windowed-card.py DIR-int8`: a one-member pair-fusion card at DIR (DIR-int8 without -int8) that
reads DIR-int8's cross-encoder in windows (80 words every 60), as the shipped fusions read long
passages; its windows are models/mpnet-base-general's."""
import json
import os
import sys

out = sys.argv[1].rstrip("/")
name = os.path.basename(out)
card = json.load(open("models/mpnet-base-general/model.json"))
card["name"] = name.removesuffix("-int8")
card["config"] = {"members": [{"model": "../" + name, "weight": 1.0}], "windows": card["config"]["windows"]}
card["training"] = {
    "train_data": [], "dev_data": "target/general/suite (scripts/bench-general.sh)",
    "hyperparameters": {"score": f"logit of {name} alone",
                        "windows": "candidates over 80 words scored by their best window of 80 words every 60"},
    "seed": 42, "epochs_completed": 0, "best_epoch": None, "metrics": {}, "train_seconds": 0.0,
    "machine": "nothing trained: the cross-encoder's card records its training",
    "base": [name]}
path = out.removesuffix("-int8")
os.makedirs(path, exist_ok=True)
with open(os.path.join(path, "model.json"), "w") as f:
    json.dump(card, f, indent=2)
