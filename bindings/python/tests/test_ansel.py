"""The Python package against the command line it wraps: same scores, same errors."""

import json
import subprocess
import threading
import time
from pathlib import Path

import pytest

import ansel

REPO = Path(__file__).resolve().parents[3]
CLI = REPO / "target" / "release" / "ansel"
SAMPLE = REPO / "examples" / "sample-questions.jsonl"
CORPUS = REPO / "examples" / "corpus"

EIFFEL = "How tall is the Eiffel Tower?"
TEXTS = ["Grass is green.", "The tower is 330 metres tall.", "The Eiffel Tower is in Paris."]


def cli(*args, check=True):
    if not CLI.exists():
        pytest.skip("build the command line first: cargo build --release -p ansel")
    return subprocess.run([str(CLI), *args], capture_output=True, text=True, check=check)


def sample_questions():
    with open(SAMPLE) as f:
        return [json.loads(line) for line in f if line.strip()]


def test_score_gives_one_float_per_text_and_rank_orders_them():
    ranker = ansel.Ranker("wo-rr")
    scores = ranker.score(EIFFEL, TEXTS)
    assert len(scores) == 3 and all(isinstance(s, float) for s in scores)
    assert scores[0] < scores[2]
    ranked = ranker.rank(EIFFEL, TEXTS)
    assert [i for i, _ in ranked] == sorted(range(3), key=lambda i: (-scores[i], i))
    assert ranker.rank(EIFFEL, TEXTS, top_k=1) == ranked[:1]
    assert ranker.score(EIFFEL, []) == []
    # In document order, word-overlap ties go to the earlier sentence (wo-rr's position term).
    ordered = ranker.score(EIFFEL, ["The tower.", "The tower."], in_document_order=True)
    assert ordered[0] > ordered[1]


@pytest.mark.parametrize("model", [ansel.DEFAULT_MODEL, "wo-rr", "minilm-l6-squad-transfer"])
def test_scores_equal_the_command_lines_rank(model):
    if model.startswith("minilm") and not (REPO / "vendor" / "models" / "all-minilm-l6-v2").exists():
        pytest.skip("MiniLM is fetched by scripts/fetch-models.sh")
    expected = [json.loads(line) for line in cli("rank", "--data", str(SAMPLE), "--model", model).stdout.splitlines()]
    ranker = ansel.Ranker(model)
    questions = sample_questions()
    ordered = all(q.get("in_document_order") for q in questions)
    assert ordered, "the sample questions are each one document's sentences in order"
    batch = ranker.score_batch(
        [q["question"] for q in questions],
        [[c["text"] for c in q["candidates"]] for q in questions],
        in_document_order=True,
    )
    for q, want, got_batch in zip(questions, expected, batch):
        got = ranker.score(q["question"], [c["text"] for c in q["candidates"]], in_document_order=True)
        want_scores = [s["score"] for s in want["scores"]]
        assert got == pytest.approx(want_scores, abs=1e-5), q["id"]
        assert got_batch == pytest.approx(want_scores, abs=1e-5), q["id"]


def test_corpus_models_need_a_corpus_and_use_it():
    with pytest.raises(ansel.AnselError, match="corpus"):
        ansel.Ranker("bm25")
    with pytest.raises(ansel.AnselError, match="corpus"):
        ansel.Ranker("wo+idf-wo")
    corpus = TEXTS + ["The tower is a tower."] * 5
    scores = ansel.Ranker("bm25", corpus=corpus).score(EIFFEL, TEXTS)
    assert scores[2] > scores[1] > scores[0]


def test_errors_carry_the_command_lines_messages():
    with pytest.raises(ansel.AnselError) as err:
        ansel.Ranker("no-such-model")
    message = cli("rank", "--data", str(SAMPLE), "--model", "no-such-model", check=False).stderr
    assert str(err.value).split(" in ")[0] in message
    assert "unknown model" in str(err.value)
    with pytest.raises(ansel.AnselError, match="a\\+\\+b|single `\\+`"):
        ansel.Ranker("wo++rr")


def test_the_gil_is_released_while_rust_scores():
    ranker = ansel.Ranker("minilm-l6-general-distilled-int8")   # the default's fast first stage
    texts = [f"Sentence number {i} says the tower is {i} metres tall." for i in range(300)]
    ticks = 0
    stop = threading.Event()

    def count():
        nonlocal ticks
        while not stop.is_set():
            ticks += 1

    thread = threading.Thread(target=count)
    thread.start()
    try:
        time.sleep(0.05)
        before = ticks
        start = time.perf_counter()
        ranker.score(EIFFEL, texts)
        elapsed = time.perf_counter() - start
        during = ticks - before
    finally:
        stop.set()
        thread.join()
    # Holding the GIL, the counting thread would stand still for the whole call.
    assert elapsed > 0.02, "too quick to tell"
    assert during > 10_000, (during, elapsed)


def test_index_adds_documents_and_answers_with_context(tmp_path):
    index = ansel.Index(tmp_path / "idx", model="wo-rr")
    added = index.add([
        {"id": "eiffel", "title": "Eiffel Tower", "text": "The Eiffel Tower is in Paris. The tower is 330 metres tall. It opened in 1889."},
        {"id": "grass", "text": "Grass is green. It grows in spring."},
    ])
    assert added == 5
    assert index.stats() == {"documents": 2, "sentences": 5, "unit": "sentence"}
    answers = index.ask(EIFFEL, top_k=2)
    assert len(answers) == 2
    best = answers[0]
    assert set(best) == {"text", "score", "stage", "title", "doc_id", "position", "prev", "next", "span"}
    assert best["doc_id"] == "eiffel" and best["title"] == "Eiffel Tower"
    if best["position"] == 1:
        assert best["prev"] == "The Eiffel Tower is in Paris." and best["next"] == "It opened in 1889."
    # Adding a document with the same id replaces it; a new cascade sees the change.
    index.add([{"id": "grass", "text": "Grass is green."}])
    assert index.stats() == {"documents": 2, "sentences": 4, "unit": "sentence"}
    # The index is on disk: a second handle opens it.
    assert ansel.Index(tmp_path / "idx").stats()["sentences"] == 4


def test_add_checks_every_document_first(tmp_path):
    index = ansel.Index(tmp_path / "idx")
    with pytest.raises(ansel.AnselError, match=r"documents\[1\]: missing field \"text\""):
        index.add([{"id": "a", "text": "Fine."}, {"id": "b"}])
    with pytest.raises(ansel.AnselError, match=r"documents\[0\]: field \"title\" is not a string"):
        index.add([{"id": "a", "title": 3, "text": "Fine."}])
    with pytest.raises(ansel.AnselError, match=r"documents\[0\]: unknown field \"colour\""):
        index.add([{"id": "a", "text": "Fine.", "colour": "red"}])
    assert index.stats() == {"documents": 0, "sentences": 0, "unit": "sentence"}


def test_bad_paths_and_questions_are_named(tmp_path):
    with pytest.raises(ansel.AnselError, match="parent folder .*no-such-dir.* does not exist"):
        ansel.Index(tmp_path / "no-such-dir" / "idx")
    assert not (tmp_path / "no-such-dir").exists()
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    with pytest.raises(ansel.AnselError, match="a file, not a folder"):
        ansel.Index(a_file)
    index = ansel.Index(tmp_path / "idx", model="wo-rr", prune_model="none")
    with pytest.raises(ansel.AnselError, match="missing.*no such file or folder"):
        index.add_files([str(tmp_path / "missing")])
    index.add([{"id": "a", "text": "Bees make honey."}])
    with pytest.raises(ansel.AnselError, match="question is empty"):
        index.ask("  ")


def test_add_files_matches_the_command_line_and_names_the_bad_line(tmp_path):
    index = ansel.Index(tmp_path / "py", model="wo-rr")
    added = index.add_files([CORPUS])
    cli("index", "--index", str(tmp_path / "cli"), str(CORPUS))
    assert added["documents"] > 0 and added["sentences"] > 0
    assert index.stats() == ansel.Index(tmp_path / "cli").stats()
    question = "Who invented the Fresnel lens?"
    got = index.ask(question, top_k=3)
    want = json.loads(cli("ask", "--index", str(tmp_path / "cli"), "--model", "wo-rr", "--top", "3", "--json", question).stdout)
    assert [a["text"] for a in got] == [a["text"] for a in want["answers"]]
    assert [a["score"] for a in got] == pytest.approx([a["score"] for a in want["answers"]], abs=1e-5)

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "Fine."}\n{"id": "b"\n')
    before = index.stats()
    with pytest.raises(ansel.AnselError, match=r"bad\.jsonl:2"):
        index.add_files([bad])
    assert index.stats() == before


def test_default_index_answers_the_quick_start_question(tmp_path):
    index = ansel.Index(tmp_path / "idx")
    index.add_files([str(CORPUS)])
    answers = index.ask("Who invented the Fresnel lens?", top_k=1)
    assert "Fresnel" in answers[0]["text"]
    span = answers[0]["span"]
    assert span is not None, answers[0]
    assert answers[0]["text"][span["start"]:span["end"]] == span["text"]
    assert 0.0 <= span["score"] <= 1.0
    assert index.ask("Who invented the Fresnel lens?", top_k=1, spans=0)[0]["span"] is None
    with pytest.raises(ansel.AnselError, match="top_k"):
        index.ask("x", top_k=0)


KIDS = "Which physician looks after kids?"
PAEDIATRICIAN = "A paediatrician is a doctor for children."
DOCS = [
    {"id": "paediatrics", "title": "Paediatrics", "text": PAEDIATRICIAN + " Most train for years."},
    {"id": "bees", "title": "Bees", "text": "Bees make honey in hives. A queen lays the eggs."},
]


def test_passage_index_answers_with_paragraphs_under_their_headings(tmp_path):
    index = ansel.Index(tmp_path / "p", model="wo-rr", prune_model="none", unit="passage")
    index.add([{"id": "bees", "title": "Bees", "text": "# Hives\n\nBees live in hives. They make honey.\n\n# Queens\n\nA queen lays the eggs."}])
    assert index.stats() == {"documents": 1, "sentences": 2, "unit": "passage"}
    best = index.ask("Where do bees live?", top_k=1)[0]
    assert best["text"] == "Bees live in hives. They make honey."
    assert best["title"] == "Bees \u203a Hives"
    # The unit is set when the index is made: opening it as sentences is refused.
    with pytest.raises(ansel.AnselError, match="holds passages, not sentences"):
        ansel.Index(tmp_path / "p", unit="sentence")
    assert ansel.Index(tmp_path / "p").stats()["unit"] == "passage"
    with pytest.raises(ansel.AnselError, match="unit"):
        ansel.Index(tmp_path / "q", unit="word")


def test_retrievers_are_checked_and_dense_needs_vectors(tmp_path):
    with pytest.raises(ansel.AnselError, match="retriever.*sparse"):
        ansel.Index(tmp_path / "x", retriever="sparse")
    index = ansel.Index(tmp_path / "bm25", model="wo", prune_model="none")
    index.add(DOCS)
    with pytest.raises(ansel.AnselError, match="retriever.*sparse"):
        index.ask(KIDS, retriever="sparse")
    with pytest.raises(ansel.AnselError, match="vectors"):
        index.ask(KIDS, retriever="dense")
    with pytest.raises(ansel.AnselError, match="vectors"):
        ansel.Index(tmp_path / "bm25", retriever="hybrid").ask(KIDS)


def test_an_index_with_vectors_adds_in_step_and_finds_a_paraphrase(tmp_path):
    index = ansel.Index(tmp_path / "d", model="wo", prune_model="none", retrieve=1, dense="minilm-l6-cosine")
    index.add(DOCS[:1])
    # A second handle without dense= keeps the vectors in step with the index's own encoder.
    later = ansel.Index(tmp_path / "d", model="wo", prune_model="none", retrieve=1)
    later.add(DOCS[1:])
    settings = json.loads((tmp_path / "d" / "ansel-index.json").read_text())
    assert settings["dense"]["model"] == "minilm-l6-cosine" and settings["dense"]["count"] == 4
    # BM25 shares no word with the question; the dense and hybrid retrievers find the answer.
    assert later.ask(KIDS, retriever="bm25") == []
    for retriever in ["dense", "hybrid"]:
        assert later.ask(KIDS, top_k=1, retriever=retriever)[0]["text"] == PAEDIATRICIAN
    # The default retriever, "auto", is hybrid on an index with vectors.
    assert later.ask(KIDS, top_k=1)[0]["text"] == PAEDIATRICIAN
    bm25 = ansel.Index(tmp_path / "d", model="wo", prune_model="none", retrieve=1, retriever="bm25")
    assert bm25.ask(KIDS) == []


def test_an_index_with_vectors_refuses_another_encoder(tmp_path):
    # MPNet comes from scripts/fetch-mpnet.sh, which the set-up does not run.
    if not (REPO / "vendor" / "models" / "all-mpnet-base-v2" / "config.json").exists():
        pytest.skip("MPNet base not fetched (bash scripts/fetch-mpnet.sh)")
    index = ansel.Index(tmp_path / "d", model="wo", prune_model="none", dense="minilm-l6-cosine")
    index.add(DOCS[:1])
    with pytest.raises(ansel.AnselError, match="minilm-l6-cosine"):
        ansel.Index(tmp_path / "d", dense="mpnet-base-cosine").add([{"id": "x", "text": "Other vectors."}])


def test_span_offsets_index_python_strings(tmp_path):
    # Characters before the span that take several UTF-8 bytes: offsets count characters.
    index = ansel.Index(tmp_path / "idx", reader="rule")
    index.add([{"id": "cafe", "title": "Café", "text": "Le café « Procope » à Paris opened in 1686 on the rue de l’Ancienne-Comédie."}])
    best = index.ask("When did the café open?", top_k=1)[0]
    span = best["span"]
    assert span is not None, best
    assert best["text"][span["start"]:span["end"]] == span["text"]
    with pytest.raises(ansel.AnselError, match="span reader"):
        ansel.Index(tmp_path / "idx2", reader="no-such-reader").ask("x")


def test_precomputed_vectors_are_stored_without_encoding_again(tmp_path):
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    texts = [t for d in DOCS for t in ansel.units(d["text"], title=d["title"])]
    assert texts[0] == PAEDIATRICIAN and len(texts) == 4
    encoder = ansel.Encoder("minilm-l6-cosine")
    assert encoder.dim == 384 and len(encoder.encode(texts[:2])) == 2
    (tmp_path / "v").mkdir()
    assert encoder.write_vectors(tmp_path / "v" / "a.ansel-vectors", texts[:3]) == 3
    index = ansel.Index(tmp_path / "d", model="wo", prune_model="none", retrieve=1, dense="minilm-l6-cosine")
    added = index.add_files([docs], vectors=[tmp_path / "v"])
    assert (added["sentences"], added["vectors_found"], added["vectors_encoded"]) == (4, 3, 1)
    assert index.ask(KIDS, top_k=1, retriever="dense")[0]["text"] == PAEDIATRICIAN
    # Vectors of another encoder, or a damaged file, are refused naming the file.
    (tmp_path / "v" / "a.ansel-vectors").write_bytes(b"{\"id\": \"not vectors\"}\n")
    with pytest.raises(ansel.AnselError, match="a.ansel-vectors.*not a file of precomputed vectors"):
        ansel.Index(tmp_path / "e", dense="minilm-l6-cosine").add_files([docs], vectors=[tmp_path / "v"])
    with pytest.raises(ansel.AnselError, match="unit"):
        ansel.units("x", unit="word")
