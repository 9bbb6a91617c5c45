#!/usr/bin/python3
"""Run by test_distributed.py: two tensor-parallel ranks (torch.multiprocessing, backend gloo)
load the same checkpoints with tensormap.safe_open and get_slice, and all_gather the parts.

    dist_worker.py RESULT_JSON CHECKPOINT [CHECKPOINT ...]

Each CHECKPOINT is a path or URL; every rank reads, of each tensor whose name says so, its
column-parallel part (rows a..b of the (out, in) weight: q, k, v, up, gate) or its row-parallel
part (columns a..b: o, down), then all_gather rebuilds the whole and it is compared, bit for bit,
with get_tensor of the whole tensor (read after the parts, so that bytes fetched over HTTP count
the parts alone). Rank 0 writes what each rank saw to RESULT_JSON."""

import json
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import tensormap

WORLD = 2
ROW_PARALLEL = ("attn_output", "o_proj", "ffn_down", "down_proj")


def gather(part, dim):
    """all_gather of the 2-d parts along dim, as their bytes (gloo knows neither bfloat16 nor
    int16): the last dimension's bytes side by side are still those of the whole."""
    bits = part.contiguous().view(torch.uint8)
    parts = [torch.empty_like(bits) for _ in range(WORLD)]
    dist.all_gather(parts, bits)
    return torch.cat(parts, dim)


def rank_main(rank, port, checkpoints, result):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=WORLD)
    seen = []
    for path in checkpoints:
        with tensormap.safe_open(path, framework="pt") as f:
            start = f._file.fetched()[0]
            parts = {}
            for name in f.keys():
                s = f.get_slice(name)
                dim = 1 if any(k in name for k in ROW_PARALLEL) else 0
                n = s.get_shape()[dim]
                a, b = n * rank // WORLD, n * (rank + 1) // WORLD
                parts[name] = (dim, s[a:b] if dim == 0 else s[:, a:b])
            fetched = f._file.fetched()[0] - start
            same, dtypes = {}, {}
            for name, (dim, part) in parts.items():
                whole = f.get_tensor(name)
                same[name] = bool(torch.equal(gather(part, dim), whole.view(torch.uint8)))
                dtypes[name] = str(whole.dtype)
            seen.append({"path": path, "fetched": fetched, "same": same, "dtypes": dtypes,
                         "shapes": {n: list(p.shape) for n, (_, p) in parts.items()}})
    everyone = [None] * WORLD
    dist.all_gather_object(everyone, seen)
    if rank == 0:
        with open(result, "w") as fp:
            json.dump(everyone, fp)
    dist.destroy_process_group()


def main():
    result, checkpoints = sys.argv[1], sys.argv[2:]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(rank_main, args=(port, checkpoints, result), nprocs=WORLD, join=True)


if __name__ == "__main__":
    main()
