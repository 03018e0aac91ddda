#!/usr/bin/env python3
"""A model that ansel shipped only as an int8 ONNX graph (`ansel quantize`), back as a directory of
fp32 weights, for the tools that need the encoder itself rather than its outputs:
- an MPNet cross-encoder -> a Hugging Face MPNetForSequenceClassification directory (CASSIE's
  frozen-encoder head reads the token states);
- a BERT-family span reader (`span-extractor-onnx`) -> a `span-extractor` directory that
  `ansel train --model span-extractor --base` continues training from (runs/ does not outlive a
  session; the shipped graph does).

    python3 bench/dequantize_onnx.py models/mpnet-base-squad-tanda-int8 OUT_DIR
    python3 bench/dequantize_onnx.py models/minilm-l6-squad-span-int8 OUT_DIR

(`bash scripts/dequantize-onnx.sh SRC OUT` runs it in a virtual environment with its pins.)
Each int8 matrix is multiplied back by its scale (per output column, per row for the word
embeddings); fp16 tensors are widened. The result is the int8 model's weights, not the fp16 weights
it was quantized from (those were not kept): its outputs differ from the int8 graph's by the
activation quantization the graph adds, and from the original model by the weight rounding.
Needs numpy and onnx.
"""
import json
import os
import re
import shutil
import struct
import sys

import numpy as np
import onnx
from onnx import numpy_helper

# ansel's graph names -> transformers' MPNet names (prefix `mpnet.` added after).
MPNET_RENAMES = [
    (r"attention\.self\.query\.", "attention.attn.q."),
    (r"attention\.self\.key\.", "attention.attn.k."),
    (r"attention\.self\.value\.", "attention.attn.v."),
    (r"attention\.output\.dense\.", "attention.attn.o."),
    (r"attention\.output\.LayerNorm\.", "attention.LayerNorm."),
]
# A span reader's start/end head: kept beside the encoder in its own file, as ansel trains it.
SPAN_HEAD = ("span_head.weight", "span_head.bias")


def mpnet_name(name):
    if name.startswith("pooler.dense."):
        return "classifier.dense." + name[len("pooler.dense."):]
    if name.startswith("classifier."):
        return "classifier.out_proj." + name[len("classifier."):]
    for pattern, new in MPNET_RENAMES:
        name = re.sub(pattern, new, name)
    return "mpnet." + name


def bert_name(name):
    if name.startswith("classifier.") or name in SPAN_HEAD:
        return name
    return "bert." + name


def dequantized(graph, hf_name):
    """{transformers name: fp32 array} from the graph's initializers."""
    init = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    out = {}
    for name, value in init.items():
        if name.endswith(".int8") and name.endswith("weight_t.int8"):
            base = name[: -len("_t.int8")]
            w = value.astype(np.float32) * init[base + "_scale"][None, :]
            out[hf_name(base)] = w.T
        elif name.endswith("weight.int8"):
            base = name[: -len(".int8")]
            out[hf_name(base)] = value.astype(np.float32) * init[base + ".row_scale"][:, None]
        elif name.endswith("weight_t.f16"):
            out[hf_name(name[: -len("_t.f16")])] = value.astype(np.float32).T
        elif name.endswith(".f16"):
            out[hf_name(name[: -len(".f16")])] = value.astype(np.float32)
        elif name == "span_head.weight_t":
            out[hf_name("span_head.weight")] = value.astype(np.float32).T
        elif name in ("classifier.bias", "span_head.bias"):
            out[hf_name(name)] = value.astype(np.float32).reshape(-1)
    return out


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        data = np.ascontiguousarray(tensors[name], dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "pt"}
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for b in blobs:
            f.write(b)
    os.replace(path + ".tmp", path)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, out = sys.argv[1], sys.argv[2]
    card = json.load(open(os.path.join(src, "model.json")))
    config = json.load(open(os.path.join(src, "config.json")))
    reader = card["kind"] == "span-extractor-onnx"
    mpnet = config.get("model_type") == "mpnet"
    if reader == mpnet:
        sys.exit(f"{src}/model.json: kind {card['kind']!r} of a {config.get('model_type')!r} model: "
                 "expected an MPNet cross-encoder or a BERT-family span reader")
    graph = onnx.load(os.path.join(src, "model.onnx")).graph
    tensors = dequantized(graph, mpnet_name if mpnet else bert_name)
    prefix = "mpnet" if mpnet else "bert"
    layers = {int(m.group(1)) for k in tensors if (m := re.match(prefix + r"\.encoder\.layer\.(\d+)\.", k))}
    # Embeddings (MPNet: word, position, LayerNorm w/b and the relative-position bias; BERT: word,
    # position, token type, LayerNorm w/b), the head (MPNet: dense and out_proj; a span reader: its
    # start/end projection; w/b each), and 16 per layer (q, k, v, o, 3 dense, 3 LayerNorm: weights
    # and biases).
    expected = {True: 9, False: 7}[mpnet] + 16 * len(layers)
    if len(tensors) != expected:
        sys.exit(f"{src}: {len(tensors)} tensors from the graph, expected {expected}: not an ansel export?")
    os.makedirs(out, exist_ok=True)
    if reader:
        head = {name: tensors.pop(name) for name in SPAN_HEAD}
        write_safetensors(os.path.join(out, "span_head.safetensors"), head)
    write_safetensors(os.path.join(out, "model.safetensors"), tensors)
    if mpnet:
        config["architectures"] = ["MPNetForSequenceClassification"]
    json.dump(config, open(os.path.join(out, "config.json"), "w"), indent=2)
    shutil.copy(os.path.join(src, "tokenizer.json"), out)
    if reader:
        card["kind"] = "span-extractor"
        for onnx_only in ("opset", "precision", "scheme", "source", "source_name"):
            card["config"].pop(onnx_only, None)
    else:
        card["kind"] = "cross-encoder"
        card["config"] = {"input": card["config"]["input"], "max_len": card["config"]["max_len"], "batch_size": 32}
    card["name"] = card["name"] + "-dequantized"
    card["note"] = (f"The int8 weights of {src} multiplied back by their scales (bench/dequantize_onnx.py), "
                    "fp32, for tools that need the encoder itself.")
    json.dump(card, open(os.path.join(out, "model.json"), "w"), indent=2)
    print(f"{out}: {len(tensors)} encoder tensors, {len(layers)} layers")


if __name__ == "__main__":
    main()
