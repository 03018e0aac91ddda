#!/usr/bin/env bash
# Builds the Python package's two wheels into target/wheels and prints their sizes: the full
# one (every model family; links the checkout's vendor/libtorch) and the one without libtorch
# (lexical models and ONNX cross-encoders; ONNX Runtime from the `onnxruntime` package, extra
# `[onnx]`). Then installs the light wheel in a fresh environment and checks that it scores
# (bench/wheel_check.py).
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/wheels
rm -rf "$out" && mkdir -p "$out/full" "$out/light"
venv=target/wheel-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check "maturin>=1.5,<2"
# The full wheel records the checkout's libtorch path instead of carrying libtorch (what a
# self-contained wheel would have to carry is printed below).
"$venv/bin/maturin" build -q --release -m bindings/python/Cargo.toml -o "$out/full" --auditwheel skip
"$venv/bin/maturin" build -q --release -m bindings/python/Cargo.toml -o "$out/light" --no-default-features
ls -l "$out"/full/*.whl "$out"/light/*.whl
so=$(unzip -l "$out"/full/*.whl | awk '/_ansel.*\.so$/ {print $4}')
mkdir -p "$out/unpacked" && unzip -q -o "$out"/full/*.whl -d "$out/unpacked"
echo "libtorch libraries the full extension loads (a self-contained wheel would carry them):"
ldd "$out/unpacked/$so" | awk '/vendor\/libtorch/ {print $3}' | xargs du -cshL | tail -1
light=$(ls "$out"/light/*.whl)
check=target/wheel-check-venv
rm -rf "$check" && python3 -m venv "$check"
"$check/bin/pip" install -q --disable-pip-version-check "$light[onnx]"
onnx=target/minilm-l6-squad-transfer-int8
[ -d "$onnx" ] || ./target/release/ansel quantize --model minilm-l6-squad-transfer --out "$onnx"
# Run from elsewhere, so that nothing of the checkout is on the path.
repo=$PWD
(cd /tmp && "$repo/$check/bin/python" "$repo/bench/wheel_check.py" "$repo" "$repo/$onnx")
