#!/usr/bin/env python3
"""Moves a model directory to or from a lent GPU machine in pieces that fit its calls.

A device call sends at most 64 MiB (code included) and brings back at most 8 files of 16 MiB, so
an MPNet-base directory (438 MB of fp32 weights) travels as an int8 pack split into parts, over
several calls made while the machine is warm:

    python3 bench/device_pack.py pack SRC_DIR PACK_DIR --part-mib 44   # here: PACK_DIR/part-000...
    python3 bench/device_pack.py unpack PACK_DIR DEST_DIR              # there: checks, then writes DEST_DIR
    python3 bench/device_pack.py check PACK_DIR                        # which parts are here and sound

The pack is a tar of SRC_DIR's files (sub-folders left out; `--files` names which) in which every 2-D float tensor of
`model.safetensors` of 4096 or more values is stored as int8 per row (scale = max|row| / 127) (or as
float16, those `--float16` names) and every other tensor as it is; `unpack` writes the weights back as float32, each within half a scale
of the original (fine-tuning starts from them; ansel quantizes them again to its own int8).
`pack.json` lists each part's size and sha256: a missing or damaged part is named before anything
is written, and DEST_DIR is replaced only when whole.
"""
import argparse
import hashlib
import io
import json
import os
import shutil
import sys
import tarfile

import numpy as np
from safetensors.numpy import load, save

WEIGHTS = "model.safetensors"
SCALE = ".int8_scale"
MIN_VALUES = 4096


def quantize(tensors, half=()):
    """int8 rows with their float32 scales for large 2-D float tensors, float16 for those whose
    name contains one of `half`; the rest unchanged."""
    out = {}
    for name, t in tensors.items():
        if t.dtype.kind == "f" and any(h in name for h in half):
            out[name] = t.astype(np.float16)
        elif t.ndim == 2 and t.size >= MIN_VALUES and t.dtype.kind == "f":
            w = t.astype(np.float32)
            scale = np.abs(w).max(axis=1) / 127.0
            scale[scale == 0] = 1.0
            out[name] = np.clip(np.rint(w / scale[:, None]), -127, 127).astype(np.int8)
            out[name + SCALE] = scale.astype(np.float32)
        else:
            out[name] = t
    return out


def dequantize(tensors):
    """float32 weights from `quantize`'s output (tensors stored as they were stay so, as float32)."""
    out = {}
    for name, t in tensors.items():
        if name.endswith(SCALE):
            continue
        scale = tensors.get(name + SCALE)
        if scale is not None:
            out[name] = t.astype(np.float32) * scale[:, None]
        else:
            out[name] = t.astype(np.float32) if t.dtype.kind == "f" else t
    return out


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def pack(src, dest, part_mib, only=None, half=()):
    files = sorted(f for f in os.listdir(src) if os.path.isfile(os.path.join(src, f)) and (not only or f in only))
    if only and set(only) - set(files):
        sys.exit(f"{src}: no {', '.join(sorted(set(only) - set(files)))} to pack")
    if WEIGHTS not in files:
        sys.exit(f"{src}: no {WEIGHTS} to pack")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in files:
            with open(os.path.join(src, name), "rb") as f:
                data = f.read()
            if name == WEIGHTS:
                data = save(quantize(load(data), half))
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    whole = buf.getvalue()
    size = int(part_mib * 1024 * 1024)
    tmp = dest + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    parts = []
    for k, at in enumerate(range(0, len(whole), size)):
        chunk = whole[at : at + size]
        name = f"part-{k:03d}"
        with open(os.path.join(tmp, name), "wb") as f:
            f.write(chunk)
        parts.append({"file": name, "bytes": len(chunk), "sha256": sha256(chunk)})
    manifest = {"source": os.path.abspath(src), "files": files, "bytes": len(whole),
                "sha256": sha256(whole), "parts": parts}
    with open(os.path.join(tmp, "pack.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)
    print(f"{src}: {len(whole) / 2**20:.1f} MiB in {len(parts)} parts of at most {part_mib} MiB -> {dest}")


def read_parts(pack_dir):
    """The pack's bytes, or an error naming every part that is missing or damaged."""
    path = os.path.join(pack_dir, "pack.json")
    try:
        with open(path) as f:
            manifest = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"{path}: cannot read the pack's manifest ({e})")
    chunks, bad = [], []
    for part in manifest["parts"]:
        file = os.path.join(pack_dir, part["file"])
        try:
            with open(file, "rb") as f:
                chunk = f.read()
        except OSError:
            bad.append(f"{file}: missing")
            continue
        if len(chunk) != part["bytes"] or sha256(chunk) != part["sha256"]:
            bad.append(f"{file}: {len(chunk)} bytes, sha256 {sha256(chunk)[:12]}; expected "
                       f"{part['bytes']} bytes, sha256 {part['sha256'][:12]}")
        chunks.append(chunk)
    if bad:
        sys.exit("the pack is not whole:\n  " + "\n  ".join(bad))
    whole = b"".join(chunks)
    if sha256(whole) != manifest["sha256"]:
        sys.exit(f"{pack_dir}: the parts join to a pack whose sha256 differs from pack.json's")
    return whole


def unpack(pack_dir, dest):
    whole = read_parts(pack_dir)
    tmp = dest + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    with tarfile.open(fileobj=io.BytesIO(whole)) as tar:
        for member in tar.getmembers():
            if not member.isfile() or os.path.basename(member.name) != member.name:
                sys.exit(f"{pack_dir}: unexpected entry {member.name!r} in the pack")
            data = tar.extractfile(member).read()
            if member.name == WEIGHTS:
                data = save(dequantize(load(data)))
            with open(os.path.join(tmp, member.name), "wb") as f:
                f.write(data)
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)
    print(f"{pack_dir} -> {dest}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="verb", required=True)
    a = sub.add_parser("pack", help="SRC_DIR -> PACK_DIR of parts")
    a.add_argument("src")
    a.add_argument("dest")
    a.add_argument("--part-mib", type=float, default=16, help="largest part, MiB (16: what a call brings back)")
    a.add_argument("--files", help="FILE[,FILE...]: these of SRC_DIR's files only (default: all)")
    a.add_argument("--float16", help="NAME[,NAME...]: tensors whose name contains one travel as float16, not "
                   "int8 (a span reader's word embeddings, which ansel's reader graph keeps float)")
    a = sub.add_parser("unpack", help="PACK_DIR -> DEST_DIR, float32 weights")
    a.add_argument("pack_dir")
    a.add_argument("dest")
    a = sub.add_parser("check", help="are all parts of PACK_DIR here and sound")
    a.add_argument("pack_dir")
    args = p.parse_args()
    if args.verb == "pack":
        pack(args.src, args.dest, args.part_mib, args.files.split(",") if args.files else None,
             tuple(args.float16.split(",")) if args.float16 else ())
    elif args.verb == "unpack":
        unpack(args.pack_dir, args.dest)
    else:
        read_parts(args.pack_dir)
        print(f"{args.pack_dir}: every part is here and sound")


if __name__ == "__main__":
    main()
