"""Real reranking clients against a running `ansel serve` (scripts/test-clients.sh): the official
cohere SDK (v2 and v1 clients) and the rerankers library (its Jina API ranker). Exits
non-zero on the first wrong answer.

    python bench/client_compat.py BASE_URL API_KEY
"""
import sys

import cohere
from rerankers.models.api_rankers import APIRanker

base, key = sys.argv[1], sys.argv[2]
query = "How long does a worker bee live in summer?"
documents = [
    "Grass is green in spring.",
    "In summer a worker bee lives for about six weeks.",
    "The queen bee can live for several years.",
]
answer = 1


def check(what, ok, detail):
    print(f"{'ok  ' if ok else 'FAIL'} {what}: {detail}")
    if not ok:
        sys.exit(1)


v2 = cohere.ClientV2(api_key=key, base_url=base)
response = v2.rerank(model="ansel", query=query, documents=documents, top_n=2)
indices = [r.index for r in response.results]
check("cohere ClientV2.rerank", indices[0] == answer and len(indices) == 2,
      f"indices {indices}, scores {[round(r.relevance_score, 4) for r in response.results]}")

v1 = cohere.Client(api_key=key, base_url=base)
response = v1.rerank(model="ansel", query=query, documents=documents, top_n=3, return_documents=True)
first = response.results[0]
check("cohere Client.rerank (v1, return_documents)",
      first.index == answer and first.document.text == documents[answer] and len(response.results) == 3,
      f"first {first.index}: {first.document.text!r}")

try:
    cohere.ClientV2(api_key="wrong-key", base_url=base).rerank(model="ansel", query=query, documents=documents)
    check("a wrong API key is refused", False, "the request was served")
except cohere.errors.UnauthorizedError as e:
    check("a wrong API key is refused", True, f"UnauthorizedError ({e.status_code})")

# rerankers' TEI ranker also sends `top_n` and `model`, which TEI's /rerank does not define and
# ansel refuses (unknown fields get 422), so its Jina ranker is the one tested.
ranker = APIRanker(model="ansel", api_key=key, api_provider="jina", url=base + "/v1/rerank", verbose=0)
top = ranker.rank(query=query, docs=documents).top_k(1)[0]
check("rerankers APIRanker (jina, /v1/rerank)", top.document.text == documents[answer],
      f"top {top.document.text!r} score {top.score:.4f}")
