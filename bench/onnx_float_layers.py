#!/usr/bin/env python3
"""Which dense layers of an int8 ONNX graph of ansel's cost its accuracy: a copy of the int8 graph
with the dense layers whose name matches a pattern read in float (their weights from the fp32 graph
of the same source, `ansel quantize --precision fp32`), for `ansel eval-reader` or `ansel eval`.

    python3 bench/onnx_float_layers.py INT8_DIR FP32_DIR OUT_DIR 'layer\\.[0-9]+\\.output\\.dense$'

Each int8 dense layer is one `DynamicQuantizeMatMul` whose weight is `PREFIX.weight_t.int8`; the
fp32 graph holds `PREFIX.weight_t.f16` (float16 storage, exact) and the same bias. Needs numpy and
onnx (scripts/dequantize-onnx.sh's virtual environment has them)."""
import os
import re
import shutil
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

INT8_SUFFIX = ".weight_t.int8"


def main(int8_dir, fp32_dir, out_dir, pattern):
    model = onnx.load(os.path.join(int8_dir, "model.onnx"))
    fp32 = {t.name: t for t in onnx.load(os.path.join(fp32_dir, "model.onnx")).graph.initializer}
    nodes, weights = [], []
    for node in model.graph.node:
        prefix = node.input[1][: -len(INT8_SUFFIX)] if node.op_type == "DynamicQuantizeMatMul" else None
        if prefix is None or not re.search(pattern, prefix):
            nodes.append(node)
            continue
        name = prefix + ".weight_t.f16"
        if name not in fp32:
            sys.exit(f"{fp32_dir}/model.onnx: no {name} (not the fp32 graph of the same source?)")
        weight = numpy_helper.to_array(fp32[name]).astype(np.float32)
        weights.append(numpy_helper.from_array(weight, prefix + ".weight_t.float"))
        product = prefix + ".float_product"
        nodes.append(helper.make_node("MatMul", [node.input[0], prefix + ".weight_t.float"], [product]))
        nodes.append(helper.make_node("Add", [product, node.input[4]], [node.output[0]]))
    if not weights:
        sys.exit(f"no int8 dense layer of {int8_dir} matches {pattern!r}")
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    model.graph.initializer.extend(weights)
    os.makedirs(out_dir, exist_ok=True)
    for name in os.listdir(int8_dir):
        if name != "model.onnx":
            shutil.copy(os.path.join(int8_dir, name), out_dir)
    onnx.save(model, os.path.join(out_dir, "model.onnx"))
    print(f"{len(weights)} dense layers in float: {out_dir}")


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(*sys.argv[1:])
