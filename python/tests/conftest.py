"""Shared by the Python tests: where the corpus is, and its golden tables read as ggml wrote them.

Run by `make test` as `PYTHONPATH=python /usr/bin/python3 -m pytest python/tests` with
TENSORMAP_LIBRARY pointing at the build's library and TM_CORPUS at ../shared/corpus."""

import os
import struct

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


def require_view_matches_file(stem):
    """The .view.tsv describes the .gguf beside it; if the file's own header (read here from its
    first 24 bytes, not through the library) gives other counts, the corpus was changed after the
    view was made, and what the view says about offsets and entries no longer holds: the test
    that would compare the library with it is skipped, saying so (pytest -rs prints it)."""
    view = golden_view(stem)
    with open(corpus_path("golden", stem + ".gguf"), "rb") as fp:
        magic, version, n_tensors, n_kv = struct.unpack("<4sIQQ", fp.read(24))
    file_says = (magic, version, n_tensors, n_kv)
    view_says = (b"GGUF", view["version"], view["n_tensors"], view["n_kv"])
    if file_says != view_says:
        pytest.skip(f"corpus {stem}.gguf no longer matches {stem}.view.tsv (its header says "
                    f"version {version}, {n_tensors} tensors, {n_kv} entries; the view "
                    f"{view['version']}, {view['n_tensors']}, {view['n_kv']}): the corpus file "
                    "was changed after ggml's view of it was written")


@pytest.fixture(params=GOLDEN)
def golden(request):
    return request.param
