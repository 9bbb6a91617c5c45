"""Shared by the Python tests: where the corpus is, and its golden tables read as ggml wrote them.

Run by `make test` as `PYTHONPATH=python /usr/bin/python3 -m pytest python/tests` with
TENSORMAP_LIBRARY pointing at the build's library and TM_CORPUS at ../shared/corpus."""

import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.environ.get("TM_CORPUS") or os.path.join(ROOT, "..", "shared", "corpus")
GOLDEN = ("golden-a", "golden-b")


def corpus_path(*parts):
    path = os.path.join(CORPUS, *parts)
    if not os.path.exists(path):   # a missing oracle is a failure, never a skip
        pytest.fail(f"corpus file {path} is missing (set TM_CORPUS to ../shared/corpus)")
    return path


def read_tsv(path):
    with open(path, encoding="utf-8") as fp:
        return [line.rstrip("\n").split("\t") for line in fp]


def golden_tensors(stem):
    """The .tsv rows: name, type, n_dims, ne0..ne3, f32 byte offset, value count."""
    rows = read_tsv(corpus_path("golden", stem + ".tsv"))
    header, body = rows[0], rows[1:]
    assert header[:3] == ["name", "type", "n_dims"], header
    return [{"name": r[0], "type": r[1], "n_dims": int(r[2]), "ne": [int(x) for x in r[3:7]],
             "f32_offset": int(r[7]), "n_values": int(r[8])} for r in body]


def golden_view(stem):
    """The .view.tsv: header numbers, kv lines and tensor lines, as ggml's reader saw the file."""
    view = {"kv": [], "tensor": []}
    for r in read_tsv(corpus_path("golden", stem + ".view.tsv")):
        if r[0] in ("kv", "tensor"):
            view[r[0]].append(r[1:])
        else:
            view[r[0]] = int(r[1])
    return view


@pytest.fixture(params=GOLDEN)
def golden(request):
    return request.param
