"""examples/forward.c (build/forward) against a forward pass of the same model written here in
numpy, in float64, from the weights as get_tensor decodes them (itself checked bit for bit
against ggml). Nothing is taken from the C program but the tokens it chose: the numpy pass runs
the same token sequence (prompt, then the program's greedy picks) and its logits at every
position must match the program's, and each pick must be numpy's argmax.

The model is qwen2 as llama.cpp computes it (src/models/qwen2.cpp): RMSNorm, q/k/v with
biases, NEOX rotary embeddings, grouped-query causal attention, SwiGLU, tied or separate
output. The demo model (build/demo.gguf, written by `make`) is qwen2-shaped and untrained."""

import os
import subprocess

import numpy as np
import pytest

import tensormap

BUILD = os.path.dirname(os.path.abspath(os.environ.get("TENSORMAP_LIBRARY", "build/x")))
FORWARD = os.path.join(BUILD, "forward")
DEMO = os.path.join(BUILD, "demo.gguf")
PROMPT = [17, 300, 999, 5, 642, 1000, 77]


def need(path):
    if not os.path.exists(path):   # built by `make`: missing means the build is broken
        pytest.fail(f"{path} is missing (run through make test)")
    return path


def run_forward(*args):
    out = subprocess.run([need(FORWARD), need(DEMO), *args], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def parse_logits(stdout):
    """'logits POS TOKEN v...' lines: the tokens run and each position's logits."""
    tokens, logits = [], []
    for line in stdout.splitlines():
        if line.startswith("logits "):
            fields = line.split()
            assert int(fields[1]) == len(tokens), line[:40]
            tokens.append(int(fields[2]))
            logits.append(np.array(fields[3:], dtype=np.float64))
    return tokens, np.array(logits)


def numpy_forward(path, tokens):
    """Logits (len(tokens) x vocab) of a qwen2 model, float64, teacher-forced on tokens."""
    with tensormap.open(path) as f:
        meta = f.metadata()
        W = lambda name: f.get_tensor(name).astype(np.float64)   # noqa: E731
        n_layer = meta["qwen2.block_count"]
        n_head = meta["qwen2.attention.head_count"]
        n_kv = meta["qwen2.attention.head_count_kv"]
        eps = meta["qwen2.attention.layer_norm_rms_epsilon"]
        base = meta["qwen2.rope.freq_base"]
        embd = W("token_embd.weight")                      # (vocab, E)
        E = embd.shape[1]
        hd = E // n_head
        out_w = W("output.weight") if "output.weight" in f else embd

        def norm(x, w):
            return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w

        T = len(tokens)
        pos = np.arange(T, dtype=np.float64)[:, None]
        inv = base ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)   # (hd/2,)
        cos, sin = np.cos(pos * inv), np.sin(pos * inv)               # (T, hd/2)

        def rope_neox(x):            # x (T, heads, hd): dimension i turns with i + hd/2
            a, b = x[..., : hd // 2], x[..., hd // 2:]
            c, s = cos[:, None, :], sin[:, None, :]
            return np.concatenate([a * c - b * s, a * s + b * c], axis=-1)

        x = embd[tokens]                                   # (T, E)
        causal = np.triu(np.full((T, T), -np.inf), 1)
        for i in range(n_layer):
            p = f"blk.{i}."
            h = norm(x, W(p + "attn_norm.weight"))
            q = (h @ W(p + "attn_q.weight").T + W(p + "attn_q.bias")).reshape(T, n_head, hd)
            k = (h @ W(p + "attn_k.weight").T + W(p + "attn_k.bias")).reshape(T, n_kv, hd)
            v = (h @ W(p + "attn_v.weight").T + W(p + "attn_v.bias")).reshape(T, n_kv, hd)
            q, k = rope_neox(q), rope_neox(k)
            group = n_head // n_kv
            k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)   # head j -> j//group
            att = np.einsum("thd,shd->hts", q, k) / np.sqrt(hd) + causal
            att = np.exp(att - att.max(axis=-1, keepdims=True))
            att /= att.sum(axis=-1, keepdims=True)
            o = np.einsum("hts,shd->thd", att, v).reshape(T, E)
            x = x + o @ W(p + "attn_output.weight").T
            h = norm(x, W(p + "ffn_norm.weight"))
            g, u = h @ W(p + "ffn_gate.weight").T, h @ W(p + "ffn_up.weight").T
            x = x + (g / (1 + np.exp(-g)) * u) @ W(p + "ffn_down.weight").T
        return norm(x, W("output_norm.weight")) @ out_w.T


def check_against_numpy(mode_args, tol):
    stdout = run_forward("--prompt", ",".join(map(str, PROMPT)), "-n", "6", "--logits",
                         *mode_args)
    tokens, got = parse_logits(stdout)
    picks = [int(line.split()[1]) for line in stdout.splitlines() if line.startswith("token ")]
    assert tokens[: len(PROMPT)] == PROMPT and len(picks) == 6
    assert tokens[len(PROMPT):] == picks[:-1]       # the last pick is printed, not run
    want = numpy_forward(DEMO, tokens)
    assert got.shape == want.shape
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err <= tol, f"largest logit difference {err:.3g} of max|logit| (allowed {tol})"
    # every greedy pick is numpy's argmax at the position before it
    for i, pick in enumerate(picks):
        row = want[len(PROMPT) - 1 + i]
        assert row[pick] >= row.max() - 2 * tol * np.abs(want).max(), (i, pick, row.argmax())
    return err


def test_forward_logits_match_numpy_float32():
    # tm_matvec F32 is within 1e-6 of each product; float32 activations over 8 blocks: measured 2.7e-7
    check_against_numpy([], 2e-6)


def test_forward_logits_match_numpy_q8():
    # x rounded to 8 bits at every product, as ggml does: about 1e-2 of max|logit|
    check_against_numpy(["--q8"], 3e-2)


def test_forward_threads_give_the_same_tokens():
    one, many = run_forward("--prompt", "3,4", "-n", "4", "--logits"), \
        run_forward("--prompt", "3,4", "-n", "4", "--logits", "--threads", "2")
    assert parse_logits(one)[1].tolist() == parse_logits(many)[1].tolist()


@pytest.mark.parametrize("args, says", [
    (["--prompt", "1,1024"], "prompt token 1 is 1024, past the vocabulary's 1024 tokens"),
    (["--prompt", "1,,2"], "--prompt wants"),
    (["--prompt", ""], "--prompt wants"),
    (["-n", "-1"], "-n wants a number"),
])
def test_forward_refuses_bad_arguments(args, says):
    out = subprocess.run([need(FORWARD), need(DEMO), *args], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode != 0 and says in out.stderr, out.stderr
