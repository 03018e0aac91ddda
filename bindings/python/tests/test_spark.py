"""ansel.spark on a local[2] Spark: scores equal `ansel rank`'s on the same questions."""

import json
import os
import sys

import pytest

pyspark = pytest.importorskip("pyspark", reason="scripts/test-spark.sh installs pyspark")

import ansel  # noqa: E402
from ansel.spark import score_pairs  # noqa: E402
from test_ansel import SAMPLE, cli, sample_questions  # noqa: E402


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("ansel-test")
        # Batches of 3 rows split questions across batches: the carry-over must join them.
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "3")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "3")
        .getOrCreate()
    )
    yield session
    session.stop()


def pairs(spark):
    rows = [
        (q["id"], q["question"], i, c["text"])
        for q in sample_questions()
        for i, c in enumerate(q["candidates"])
    ]
    # Shuffled over partitions, so that the job must regroup each question's rows itself.
    return spark.createDataFrame(rows, "qid string, question string, pos int, text string").repartition(4)


@pytest.mark.parametrize("model", [ansel.DEFAULT_MODEL, "wo-rr"])
def test_spark_scores_equal_ansel_rank(spark, model):
    scored = score_pairs(pairs(spark), model, order="pos", in_document_order=True).toPandas()
    want = {
        (line["id"], int(s["id"])): s["score"]
        for line in map(json.loads, cli("rank", "--data", str(SAMPLE), "--model", model).stdout.splitlines())
        for s in line["scores"]
    }
    got = {(r.qid, r.pos): r.score for r in scored.itertuples()}
    assert set(got) == set(want)
    for key, value in want.items():
        assert got[key] == pytest.approx(value, abs=1e-5), key
    assert list(scored.columns) == ["qid", "question", "pos", "text", "score"]


def test_rows_keep_their_order_without_an_order_column(spark):
    from pyspark.sql import functions as F

    df = pairs(spark).coalesce(1).orderBy("qid", "pos")
    scored = score_pairs(df, "wo-rr", in_document_order=True).orderBy("qid", "pos").toPandas()
    want = score_pairs(df, "wo-rr", order="pos", in_document_order=True).orderBy("qid", "pos").toPandas()
    assert scored["score"].tolist() == pytest.approx(want["score"].tolist(), abs=1e-6)
    assert "_ansel_row" not in scored.columns
    assert df.select(F.countDistinct("qid")).first()[0] == len(sample_questions())


def test_the_example_script_scores_a_jsonl_table(tmp_path):
    import subprocess

    import pandas as pd

    from test_ansel import REPO

    rows = [
        {"qid": q["id"], "question": q["question"], "pos": i, "text": c["text"]}
        for q in sample_questions()
        for i, c in enumerate(q["candidates"])
    ]
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "scored"
    run = subprocess.run(
        [sys.executable, str(REPO / "examples" / "spark_score.py"), str(pairs), str(out),
         "--model", "wo-rr", "--master", "local[2]"],
        capture_output=True, text=True,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    scored = pd.read_parquet(out)
    assert len(scored) == len(rows)
    want = {
        (line["id"], int(s["id"])): s["score"]
        for line in map(json.loads, cli("rank", "--data", str(SAMPLE), "--model", "wo-rr").stdout.splitlines())
        for s in line["scores"]
    }
    for r in scored.itertuples():
        assert r.score == pytest.approx(want[(r.qid, r.pos)], abs=1e-5)


def test_units_encoded_on_spark_load_into_an_index_without_encoding_again(spark, tmp_path):
    from ansel.spark import encode_units, units
    from test_ansel import DOCS, KIDS, PAEDIATRICIAN

    docs = DOCS + [{"id": f"d{i}", "title": f"T{i}", "text": f"Fact {i} is here. Another fact {i}."}
                   for i in range(6)]
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    frame = spark.createDataFrame([(d["id"], d["title"], d["text"]) for d in docs],
                                  "id string, title string, text string").repartition(3)
    sentences = units(frame)
    rows = sentences.collect()
    assert len(rows) == 4 + 12 and {r.position for r in rows if r.id == "bees"} == {0, 1}
    written = encode_units(sentences, "minilm-l6-cosine", str(tmp_path / "vectors")).collect()
    # Batches of 3 rows: several files, every sentence in one.
    assert len(written) > 1 and sum(r.vectors for r in written) == len(rows)
    out = cli("index", "--index", str(tmp_path / "idx"), "--dense", "minilm-l6-cosine",
              "--vectors", str(tmp_path / "vectors"), str(path)).stdout
    assert f"{len(rows)} sentences took theirs from" in out and "0 were encoded here" in out, out
    index = ansel.Index(tmp_path / "idx", model="wo", prune_model="none", retrieve=1)
    assert index.ask(KIDS, top_k=1, retriever="dense")[0]["text"] == PAEDIATRICIAN
