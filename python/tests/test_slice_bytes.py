"""A tensor-parallel rank's slice reads only its bytes: get_slice(name)[a:b] of a 7B-shaped GGUF
(Llama-2-7B's layer shapes, q4_K; the data a sparse hole) served over HTTP fetches the header
chunk and exactly rows a..b of the tensor, counted by File.fetched() (bytes and requests)."""


import numpy as np
import pytest

import tensormap
from model_files import BLOCK, BLOCK_BYTES, http_server, write_model

HIDDEN, FFN = 4096, 11008
SHAPES = {"blk.0.attn_q.weight": (HIDDEN, HIDDEN),       # GGUF ne: (row, rows)
          "blk.0.ffn_up.weight": (HIDDEN, FFN),
          "blk.0.ffn_down.weight": (FFN, HIDDEN)}
CHUNK = 4096   # TM_HTTP_CHUNK: the first request, which holds the header and no tensor byte


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("www7b")
    layout = write_model(root / "llama-7b-shaped.gguf", SHAPES, sparse=True, alignment=CHUNK)
    assert min(start for start, _ in layout.values()) >= CHUNK   # no tensor byte in the head
    with http_server(root) as url:
        yield url + "/files/llama-7b-shaped.gguf", layout


@pytest.mark.parametrize("name,world", [("blk.0.attn_q.weight", 4),
                                        ("blk.0.ffn_up.weight", 2),
                                        ("blk.0.ffn_down.weight", 8)])
def test_a_rank_s_row_slice_fetches_only_its_rows(served, monkeypatch, name, world):
    url, layout = served
    monkeypatch.setenv("TM_HTTP_CHUNK", str(CHUNK))
    row, rows = SHAPES[name]
    row_bytes = row // BLOCK * BLOCK_BYTES
    rank = world - 1
    a, b = rows * rank // world, rows * (rank + 1) // world
    with tensormap.safe_open(url, framework="np") as f:
        assert f._file.fetched() == (CHUNK, 1)
        part = f.get_slice(name)[a:b]
        assert part.shape == (b - a, row) and part.dtype == np.float32
        assert not part.any()                              # the hole decodes to zeros
        got, _ = f._file.fetched()
        assert got - CHUNK == (b - a) * row_bytes, \
            f"rank {rank}/{world} fetched {got - CHUNK} bytes for {(b - a) * row_bytes}"
    assert (b - a) * row_bytes < layout[name][1] // world + row_bytes


def test_a_column_slice_fetches_only_the_blocks_of_its_columns(served, monkeypatch):
    """Row-parallel: [:, c:d] on block boundaries decodes only the blocks holding c..d of each
    row (one request per row over HTTP: here a 4-row slice of them, to stay quick)."""
    url, _ = served
    monkeypatch.setenv("TM_HTTP_CHUNK", str(CHUNK))
    name = "blk.0.ffn_down.weight"
    with tensormap.safe_open(url, framework="np") as f:
        part = f.get_slice(name)[8:12, 5376:5376 + 1024]
        assert part.shape == (4, 1024)
        got, _ = f._file.fetched()
        assert got - CHUNK == 4 * (1024 // BLOCK) * BLOCK_BYTES


def test_a_missing_url_is_file_not_found(served):
    url, _ = served
    with pytest.raises(FileNotFoundError) as e:
        tensormap.safe_open(url.replace("llama-7b", "nope"), framework="np")
    assert "HTTP 404" in e.value.message


def test_a_stored_slice_over_http_fetches_only_its_rows(tmp_path, monkeypatch):
    """safetensors over HTTP: nothing is mapped, so [a:b] of an F32 tensor fetches rows a..b,
    and a negative step is applied to them after."""
    from test_formats import write_safetensors
    w = np.random.default_rng(3).standard_normal((64, 1024)).astype("<f4")
    write_safetensors(tmp_path / "w.safetensors", {"w": ("F32", w.shape, w.tobytes())})
    monkeypatch.setenv("TM_HTTP_CHUNK", str(CHUNK))
    with http_server(tmp_path) as url:
        with tensormap.safe_open(url + "/files/w.safetensors", framework="np") as f:
            head, _ = f._file.fetched()
            part = f.get_slice("w")[40:10:-3]
            assert np.array_equal(part, w[40:10:-3])
            assert f._file.fetched()[0] - head == (40 - 13 + 1) * 1024 * 4
