"""Tensor-parallel loading on a real engine: torch.distributed (gloo), two processes
(torch.multiprocessing), each reading its column- and row-parallel slices of the attention and
MLP weights of the same GGUF (over HTTP, so that each rank's bytes are counted) and of the same
sharded safetensors checkpoint; all_gather must rebuild exactly the whole decoded tensors, and
each rank must have fetched its share of the GGUF's bytes and no more. Skipped, saying why,
without PyTorch or its distributed package."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from model_files import http_server, row_bytes, write_model
from test_formats import write_safetensors

torch = pytest.importorskip("torch", reason="PyTorch is not installed (apt-get install "
                            "python3-torch): the torch.distributed test cannot run")
if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
    pytest.skip("this PyTorch has no torch.distributed with gloo", allow_module_level=True)

# Small, so that the row-parallel slices' one request per row stays quick over HTTP; q8_0's
# 32-value blocks let a half row be whole blocks at this width.
HIDDEN, FFN = 64, 128
GGUF = {"blk.0.attn_q.weight": (HIDDEN, HIDDEN), "blk.0.attn_output.weight": (HIDDEN, HIDDEN),
        "blk.0.ffn_up.weight": (HIDDEN, FFN), "blk.0.ffn_down.weight": (FFN, HIDDEN)}
ST = {"model.layers.0.self_attn.q_proj.weight": (HIDDEN, HIDDEN),
      "model.layers.0.self_attn.o_proj.weight": (HIDDEN, HIDDEN),
      "model.layers.0.mlp.up_proj.weight": (FFN, HIDDEN),
      "model.layers.0.mlp.down_proj.weight": (HIDDEN, FFN)}
CHUNK = 4096


def sharded_bf16_checkpoint(root):
    rng = np.random.default_rng(7)
    names = list(ST)
    shards = {"model-00001-of-00002.safetensors": names[:2],
              "model-00002-of-00002.safetensors": names[2:]}
    for shard, members in shards.items():
        write_safetensors(root / shard, {n: ("BF16", ST[n], (rng.standard_normal(ST[n]).astype(
            "<f4").view("<u4") >> 16).astype("<u2").tobytes()) for n in members})
    index = root / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {}, "weight_map": {
        n: s for s, members in shards.items() for n in members}}))
    return index


def test_two_ranks_all_gather_the_whole_tensors(tmp_path, monkeypatch):
    layout = write_model(tmp_path / "tp.gguf", GGUF, kind="q8_0", alignment=CHUNK)
    assert min(start for start, _ in layout.values()) >= CHUNK   # no tensor byte in the head
    index = sharded_bf16_checkpoint(tmp_path)
    result = tmp_path / "result.json"
    monkeypatch.setenv("TM_HTTP_CHUNK", str(CHUNK))
    env = dict(os.environ)
    if "libasan" in env.get("LD_PRELOAD", ""):
        # make SAN=1: ASan preloaded into the interpreter resolves its __cxa_throw interceptor
        # when it starts, before torch has loaded libstdc++, and then aborts on the first C++
        # exception gloo throws (and catches) in a thread; libstdc++ preloaded after it is there
        # in time
        env["LD_PRELOAD"] += " libstdc++.so.6"
    with http_server(tmp_path) as url:
        run = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__),
                                                           "dist_worker.py"),
                              str(result), url + "/files/tp.gguf", str(index)],
                             capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    ranks = json.loads(result.read_text())
    assert len(ranks) == 2
    for rank, seen in enumerate(ranks):
        gguf, st = seen
        assert all(gguf["same"].values()) and set(gguf["same"]) == set(GGUF), gguf["same"]
        assert all(st["same"].values()) and set(st["same"]) == set(ST), st["same"]
        assert set(gguf["dtypes"].values()) == {"torch.float32"}
        assert set(st["dtypes"].values()) == {"torch.bfloat16"}
        # each rank's bytes: its half of every tensor (rows, or each row's blocks of its
        # columns), after the first request's header chunk
        share = 0
        for name, (row, rows) in GGUF.items():
            share += row_bytes((row, rows), "q8_0") * rows // 2
        assert gguf["fetched"] == share, f"rank {rank} fetched {gguf['fetched']} for {share}"
        assert st["shapes"]["model.layers.0.mlp.down_proj.weight"] == [HIDDEN, FFN // 2]
