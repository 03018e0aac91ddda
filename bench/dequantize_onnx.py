#!/usr/bin/env python3
"""An MPNet cross-encoder that ansel shipped only as an int8 ONNX graph (`ansel quantize`), back as a
Hugging Face MPNetForSequenceClassification directory with fp32 weights, for the tools that need the
encoder itself rather than its logits (CASSIE's frozen-encoder head reads the token states).

    python3 bench/dequantize_onnx.py models/mpnet-base-squad-tanda-int8 OUT_DIR

Each int8 matrix is multiplied back by its scale (per output column, per row for the word
embeddings); fp16 tensors are widened. The result is the int8 model's weights, not the fp16 weights
it was quantized from (those were not kept): its scores differ from the int8 graph's by the
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
RENAMES = [
    (r"attention\.self\.query\.", "attention.attn.q."),
    (r"attention\.self\.key\.", "attention.attn.k."),
    (r"attention\.self\.value\.", "attention.attn.v."),
    (r"attention\.output\.dense\.", "attention.attn.o."),
    (r"attention\.output\.LayerNorm\.", "attention.LayerNorm."),
]


def hf_name(name):
    if name.startswith("pooler.dense."):
        return "classifier.dense." + name[len("pooler.dense."):]
    if name.startswith("classifier."):
        return "classifier.out_proj." + name[len("classifier."):]
    for pattern, new in RENAMES:
        name = re.sub(pattern, new, name)
    return "mpnet." + name


def dequantized(graph):
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
        elif name == "classifier.bias":
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
    src, out = sys.argv[1], sys.argv[2]
    graph = onnx.load(os.path.join(src, "model.onnx")).graph
    tensors = dequantized(graph)
    layers = {int(m.group(1)) for k in tensors if (m := re.match(r"mpnet\.encoder\.layer\.(\d+)\.", k))}
    # Embeddings (word, position, LayerNorm w/b), the relative-position bias, the head (dense and
    # out_proj, w/b), and 16 per layer (q, k, v, o, 3 dense, 3 LayerNorm: weights and biases).
    expected = 4 + 1 + 4 + 16 * len(layers)
    if len(tensors) != expected:
        sys.exit(f"{src}: {len(tensors)} tensors from the graph, expected {expected}: not an MPNet export?")
    os.makedirs(out, exist_ok=True)
    write_safetensors(os.path.join(out, "model.safetensors"), tensors)
    config = json.load(open(os.path.join(src, "config.json")))
    config["architectures"] = ["MPNetForSequenceClassification"]
    json.dump(config, open(os.path.join(out, "config.json"), "w"), indent=2)
    shutil.copy(os.path.join(src, "tokenizer.json"), out)
    card = json.load(open(os.path.join(src, "model.json")))
    card["kind"] = "cross-encoder"
    card["config"] = {"input": card["config"]["input"], "max_len": card["config"]["max_len"], "batch_size": 32}
    card["name"] = card["name"] + "-dequantized"
    card["note"] = (f"The int8 weights of {src} multiplied back by their scales (bench/dequantize_onnx.py), "
                    "fp32, for tools that need the encoder itself.")
    json.dump(card, open(os.path.join(out, "model.json"), "w"), indent=2)
    print(f"{out}: {len(tensors)} tensors, {len(layers)} layers")


if __name__ == "__main__":
    main()
