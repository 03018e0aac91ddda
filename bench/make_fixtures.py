"""Tiny random cross-encoders in the layouts users bring, with the logits transformers and
onnxruntime compute for them: the fixtures of crates/ansel/tests/cross_encoder_fixtures.rs.

Each fixture is a directory under the output folder:
  - a Hugging Face directory (config.json, tokenizer.json, model.safetensors) of a
    *ForSequenceClassification with one label: BERT, RoBERTa, XLM-RoBERTa, MPNet;
  - an ONNX export (config.json, tokenizer.json and model.onnx or onnx/model.onnx with inputs
    input_ids, attention_mask[, token_type_ids] and output logits), as optimum and
    sentence-transformers lay them out;
and reference.json: for a few (query, passage) pairs, the token ids the model's tokenizer gives
through transformers and the logit of the pair alone (transformers on torch for the Hugging Face
directories, onnxruntime for the exports).

The models are seeded; a rerun may still write other fixtures (the tokenizer trainers break ties
between equally frequent merges in no fixed order), each consistent with its own reference. Run it
through scripts/make-fixtures.sh, which pins the versions; CI only reads the committed output.
"""

import argparse
import json
import pathlib
import shutil

import numpy as np
import onnxruntime
import torch
import transformers
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import AutoTokenizer

# Words the tokenizers are trained on and the pairs scored.
CORPUS = [
    "who wrote hamlet ?",
    "hamlet is a tragedy written by william shakespeare .",
    "the play is set in denmark , at the castle of elsinore .",
    "how are glacier caves formed ?",
    "a glacier cave is a cave formed within the ice of a glacier .",
    "glacier caves are often called ice caves .",
    "what is the capital of france ?",
    "paris is the capital and largest city of france .",
    "the river seine flows through paris .",
    "when did the first world war begin ?",
    "the war began in 1914 and ended in 1918 .",
    "zürich and köln have umlauts ; naïve café too .",
]

PAIRS = [
    ("Who wrote Hamlet?", "Hamlet is a tragedy written by William Shakespeare."),
    ("Who wrote Hamlet?", "The play is set in Denmark, at the castle of Elsinore."),
    ("how are glacier caves formed?", "A glacier cave is a cave formed within the ice of a glacier."),
    ("What is the capital of France?", "The river Seine flows through Paris."),
    ("when did the war begin", "The war began in 1914 and ended in 1918; Zürich stayed neutral."),
]

# The tokenizers learn the pairs' words too (cased: BERT's lower-cases, the others keep case).
CORPUS += [text for pair in PAIRS for text in pair]

HIDDEN = 32
LAYERS = 2
HEADS = 4
INTERMEDIATE = 64
POSITIONS = 64
# Weights ten times BERT's initialisation spread a tiny model's logits apart, so that 1e-4 means
# something.
INIT_RANGE = 0.2


def bert_tokenizer():
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok.train_from_iterator(CORPUS, trainers.WordPieceTrainer(vocab_size=180, special_tokens=specials))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    config = {"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]",
              "unk_token": "[UNK]", "mask_token": "[MASK]", "do_lower_case": True}
    return tok, config


def roberta_tokenizer():
    """Byte-level BPE, as RoBERTa's."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    tok.train_from_iterator(
        CORPUS,
        trainers.BpeTrainer(vocab_size=400, special_tokens=specials,
                            initial_alphabet=pre_tokenizers.ByteLevel.alphabet()),
    )
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0), add_prefix_space=False)
    return tok, roberta_specials()


def unigram_tokenizer():
    """A SentencePiece-style Unigram model, as XLM-RoBERTa's."""
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    tok.train_from_iterator(
        CORPUS, trainers.UnigramTrainer(vocab_size=150, special_tokens=specials, unk_token="<unk>")
    )
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", 0), ("</s>", 2)],
    )
    return tok, roberta_specials()


def mpnet_tokenizer():
    """WordPiece with RoBERTa's special tokens, as MPNet's."""
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "[UNK]", "<mask>"]
    tok.train_from_iterator(CORPUS, trainers.WordPieceTrainer(vocab_size=180, special_tokens=specials))
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", 0), ("</s>", 2)],
    )
    return tok, roberta_specials()


def roberta_specials():
    return {"bos_token": "<s>", "eos_token": "</s>", "cls_token": "<s>", "sep_token": "</s>",
            "pad_token": "<pad>", "unk_token": "<unk>", "mask_token": "<mask>"}


def family(name):
    """Config class, model class, tokenizer maker and tokenizer class of a family."""
    t = transformers
    return {
        "bert": (t.BertConfig, t.BertForSequenceClassification, bert_tokenizer, "BertTokenizer"),
        "roberta": (t.RobertaConfig, t.RobertaForSequenceClassification, roberta_tokenizer,
                    "RobertaTokenizer"),
        "xlm-roberta": (t.XLMRobertaConfig, t.XLMRobertaForSequenceClassification,
                        unigram_tokenizer, "XLMRobertaTokenizer"),
        "mpnet": (t.MPNetConfig, t.MPNetForSequenceClassification, mpnet_tokenizer,
                  "MPNetTokenizer"),
    }[name]


def make_model(name, seed, out):
    """A tiny random *ForSequenceClassification of family `name` saved as a Hugging Face
    directory in `out`; returns the model and its transformers tokenizer."""
    config_class, model_class, make_tokenizer, tokenizer_class = family(name)
    tok, specials = make_tokenizer()
    out.mkdir(parents=True)
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": tokenizer_class, "model_max_length": POSITIONS, **specials}, indent=1) + "\n")
    roberta_style = name != "bert"
    config = config_class(
        vocab_size=tok.get_vocab_size(),
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        intermediate_size=INTERMEDIATE,
        # RoBERTa-style positions start after the padding id: two rows more.
        max_position_embeddings=POSITIONS + (2 if roberta_style else 0),
        num_labels=1,
        initializer_range=INIT_RANGE,
        pad_token_id=tok.token_to_id("<pad>" if roberta_style else "[PAD]"),
        **({"type_vocab_size": 1} if name in ("roberta", "xlm-roberta") else {}),
    )
    torch.manual_seed(seed)
    model = model_class(config).eval()
    with torch.no_grad():
        # Biases and LayerNorm start at 0 and 1: give them values too, so that a wrong mapping
        # of any parameter shows in the logits.
        for pname, p in model.named_parameters():
            if pname.endswith(".bias") or "LayerNorm" in pname:
                p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(out, safe_serialization=True)
    hf_tokenizer = AutoTokenizer.from_pretrained(out)
    # transformers' own files beside tokenizer.json are not what ansel reads; keep the fixture small.
    for extra in ["special_tokens_map.json", "generation_config.json"]:
        (out / extra).unlink(missing_ok=True)
    return model, hf_tokenizer


def encode(hf_tokenizer, query, passage):
    return hf_tokenizer(query, passage, return_tensors="pt")


def reference(out, records, source):
    (out / "reference.json").write_text(json.dumps({"computed_by": source, "pairs": records}, indent=1) + "\n")


def hf_fixture(name, seed, out):
    model, tok = make_model(name, seed, out)
    records = []
    with torch.no_grad():
        for query, passage in PAIRS:
            enc = encode(tok, query, passage)
            logit = model(**enc).logits.reshape(-1)[0].item()
            records.append({"query": query, "passage": passage,
                            "input_ids": enc["input_ids"][0].tolist(), "logit": logit})
    reference(out, records, f"transformers {transformers.__version__}, torch {torch.__version__}")
    return model, tok


def onnx_fixture(name, seed, out, graph):
    """The model of `hf_fixture` exported to ONNX at `out/graph` (its safetensors dropped),
    with onnxruntime's logits as the reference."""
    model, tok = make_model(name, seed, out)
    (out / "model.safetensors").unlink()
    enc = encode(tok, *PAIRS[0])
    inputs = ["input_ids", "attention_mask"] + (["token_type_ids"] if "token_type_ids" in enc else [])
    path = out / graph
    path.parent.mkdir(parents=True, exist_ok=True)
    axes = {n: {0: "batch", 1: "sequence"} for n in inputs}
    axes["logits"] = {0: "batch"}
    torch.onnx.export(model, tuple(enc[n] for n in inputs), str(path), input_names=inputs,
                      output_names=["logits"], dynamic_axes=axes, opset_version=17,
                      dynamo=False, external_data=False)
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    records = []
    for query, passage in PAIRS:
        enc = tok(query, passage, return_tensors="np")
        feed = {n: enc[n].astype(np.int64) for n in inputs}
        logit = float(session.run(["logits"], feed)[0].reshape(-1)[0])
        records.append({"query": query, "passage": passage,
                        "input_ids": enc["input_ids"][0].tolist(), "logit": logit})
    reference(out, records, f"onnxruntime {onnxruntime.__version__} (export: torch {torch.__version__})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=pathlib.Path)
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.out.exists():
        shutil.rmtree(args.out)
    hf_fixture("bert", 1, args.out / "bert")
    hf_fixture("roberta", 2, args.out / "roberta")
    hf_fixture("xlm-roberta", 3, args.out / "xlm-roberta")
    hf_fixture("mpnet", 4, args.out / "mpnet")
    onnx_fixture("bert", 5, args.out / "bert-onnx", "model.onnx")
    onnx_fixture("xlm-roberta", 6, args.out / "xlm-roberta-onnx", "onnx/model.onnx")
    total = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(f"wrote {args.out} ({total / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
