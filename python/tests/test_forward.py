"""examples/forward.c (build/forward) against a forward pass of the same model written here in
numpy, in float64, from the weights as get_tensor decodes them (itself checked bit for bit
against ggml). Nothing is taken from the C program but the tokens it chose: the numpy pass runs
the same token sequence (prompt, then the program's greedy picks) and its logits at every
position must match the program's, and each pick must be numpy's argmax.

The model is qwen2 or llama as llama.cpp computes them (src/models/qwen2.cpp, llama.cpp):
RMSNorm, q/k/v (with biases when the file has them), rotary embeddings (qwen2: NEOX style,
dimension i turning with i + d/2; llama: the normal style, 2i with 2i + 1), grouped-query causal
attention, SwiGLU, tied or separate output. The demo model (build/demo.gguf, written by `make`)
is qwen2-shaped and untrained; its llama twin is the same file with its metadata renamed by
`tensormap edit`, so that the normal style runs on the same weights."""

import os
import subprocess

import numpy as np
import pytest

import tensormap

ARCH_KEYS = {"block_count": "u32", "context_length": "u32", "embedding_length": "u32",
             "feed_forward_length": "u32", "attention.head_count": "u32",
             "attention.head_count_kv": "u32", "rope.freq_base": "f32",
             "attention.layer_norm_rms_epsilon": "f32"}

BUILD = os.path.dirname(os.path.abspath(os.environ.get("TENSORMAP_LIBRARY", "build/x")))
FORWARD = os.path.join(BUILD, "forward")
DEMO = os.path.join(BUILD, "demo.gguf")
PROMPT = [17, 300, 999, 5, 642, 1000, 77]


def need(path):
    if not os.path.exists(path):   # built by `make`: missing means the build is broken
        pytest.fail(f"{path} is missing (run through make test)")
    return path


@pytest.fixture(scope="module")
def llama_demo(tmp_path_factory):
    """The demo model as a llama: its qwen2.* entries renamed llama.*, rope.freq_base 10000."""
    with tensormap.open(need(DEMO)) as f:
        meta = f.metadata()
    out = str(tmp_path_factory.mktemp("forward") / "llama-demo.gguf")
    cmd = [need(os.environ.get("TM_TOOL") or os.path.join(BUILD, "tensormap")), "edit",
           DEMO, "-o", out, "--set", "general.architecture=llama"]
    for key, vtype in ARCH_KEYS.items():
        value = 10000.0 if key == "rope.freq_base" else meta["qwen2." + key]
        cmd += ["--set", f"llama.{key}:{vtype}={value!r}", "--delete", "qwen2." + key]
    subprocess.run(cmd, check=True, capture_output=True, timeout=60)
    return out


def run_forward(*args, model=DEMO):
    out = subprocess.run([need(FORWARD), need(model), *args], capture_output=True, text=True,
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
    """Logits (len(tokens) x vocab) of a qwen2 or llama model, float64, teacher-forced."""
    with tensormap.open(path) as f:
        meta = f.metadata()
        W = lambda name: f.get_tensor(name).astype(np.float64)   # noqa: E731
        arch = meta["general.architecture"]
        n_layer = meta[arch + ".block_count"]
        n_head = meta[arch + ".attention.head_count"]
        n_kv = meta[arch + ".attention.head_count_kv"]
        eps = meta[arch + ".attention.layer_norm_rms_epsilon"]
        base = meta[arch + ".rope.freq_base"]
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

        def rope(x):                 # x (T, heads, hd)
            c, s = cos[:, None, :], sin[:, None, :]
            if arch == "qwen2":      # NEOX: dimension i turns with i + hd/2
                a, b = x[..., : hd // 2], x[..., hd // 2:]
                return np.concatenate([a * c - b * s, a * s + b * c], axis=-1)
            a, b = x[..., 0::2], x[..., 1::2]                         # normal: 2i with 2i + 1
            return np.stack([a * c - b * s, a * s + b * c], axis=-1).reshape(x.shape)

        x = embd[tokens]                                   # (T, E)
        causal = np.triu(np.full((T, T), -np.inf), 1)
        for i in range(n_layer):
            p = f"blk.{i}."
            h = norm(x, W(p + "attn_norm.weight"))
            q = (h @ W(p + "attn_q.weight").T + W(p + "attn_q.bias")).reshape(T, n_head, hd)
            k = (h @ W(p + "attn_k.weight").T + W(p + "attn_k.bias")).reshape(T, n_kv, hd)
            v = (h @ W(p + "attn_v.weight").T + W(p + "attn_v.bias")).reshape(T, n_kv, hd)
            q, k = rope(q), rope(k)
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


def check_against_numpy(mode_args, tol, model=DEMO):
    stdout = run_forward("--prompt", ",".join(map(str, PROMPT)), "-n", "6", "--logits",
                         *mode_args, model=model)
    tokens, got = parse_logits(stdout)
    picks = [int(line.split()[1]) for line in stdout.splitlines() if line.startswith("token ")]
    assert tokens[: len(PROMPT)] == PROMPT and len(picks) == 6
    assert tokens[len(PROMPT):] == picks[:-1]       # the last pick is printed, not run
    want = numpy_forward(model, tokens)
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


def test_forward_llama_logits_match_numpy(llama_demo):
    # the normal rope style on the same weights: the program must say it runs it
    assert "rope normal" in run_forward("-n", "1", model=llama_demo)
    check_against_numpy([], 2e-6, model=llama_demo)


def test_forward_logits_match_numpy_q8():
    # x rounded to 8 bits at every product, as ggml does: about 1e-2 of max|logit|
    check_against_numpy(["--q8"], 3e-2)


def test_forward_threads_give_the_same_tokens():
    one, many = run_forward("--prompt", "3,4", "-n", "4", "--logits"), \
        run_forward("--prompt", "3,4", "-n", "4", "--logits", "--threads", "2")
    assert parse_logits(one)[1].tolist() == parse_logits(many)[1].tolist()


def test_forward_prompt_batches_give_the_same_logits():
    # the prompt through tm_matmul in one batch, in batches of 3 (3, 3, 1: a ragged last one),
    # and token by token through tm_matvec: tm_matmul's columns are tm_matvec's bit for bit,
    # so every logit is the same float, in both modes
    prompt = ",".join(map(str, PROMPT))
    for mode in ([], ["--q8"]):
        runs = [run_forward("--prompt", prompt, "-n", "3", "--logits", *batch, *mode)
                for batch in ([], ["--batch", "3"], ["--batch", "1"])]
        assert f"the prompt by tm_matmul, {len(PROMPT)} tokens at once" in runs[0]
        assert "the prompt by tm_matmul, 3 tokens at once" in runs[1]
        assert "the prompt token by token" in runs[2]
        logits = [parse_logits(out) for out in runs]
        assert logits[0][0] == logits[1][0] == logits[2][0]
        assert logits[0][1].tolist() == logits[1][1].tolist() == logits[2][1].tolist()


def test_forward_prints_token_text_escaped():
    # byte tokens '"' (1), '\\' (59) and 'Ġ' (220, U+0120, the byte-level space), a special one
    out = run_forward("--prompt", "1,59,220,1019", "-n", "1")
    line = next(l for l in out.splitlines() if l.startswith("prompt tokens:"))
    assert line == 'prompt tokens: 1 "\\"" 59 "\\\\" 220 "\\xc4\\xa0" 1019 "<|im_start|>"', line
    assert all(c == "\n" or " " <= c <= "~" for c in out)     # nothing but printable ASCII


@pytest.mark.parametrize("edit, says", [
    (["--set", "general.architecture=gpt2"], "general.architecture is not llama or qwen2"),
    (["--delete", "qwen2.block_count"], "metadata qwen2.block_count is missing"),
    (["--set", "qwen2.block_count=9"], "no tensor 'blk.8.attn_q.weight'"),
    (["--set", "qwen2.attention.head_count_kv=3"], "3 kv heads"),
    (["--set", "qwen2.attention.head_count=0"], "qwen2.attention.head_count is not such a number"),
    (["--set", "qwen2.embedding_length=128"],
     "tensor 'token_embd.weight' has shape 256 x 1024 (2 dimensions), not 128 x 1024"),
    (["--set", "qwen2.context_length=8"], "9 positions are more than the model's context of 8"),
    (["--set", "qwen2.rope.freq_base=-1"], "qwen2.rope.freq_base is not a number"),
])
def test_forward_refuses_a_model_that_does_not_fit(tmp_path, edit, says):
    bad = str(tmp_path / "bad.gguf")
    subprocess.run([need(os.environ.get("TM_TOOL") or os.path.join(BUILD, "tensormap")), "edit",
                    DEMO, "-o", bad, *edit], check=True, capture_output=True, timeout=60)
    out = subprocess.run([need(FORWARD), bad, "--prompt", "1", "-n", "8"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 1 and f"forward: {bad}: " in out.stderr and says in out.stderr, \
        out.stderr


@pytest.mark.parametrize("args, says", [
    (["--prompt", "1,1024"], "prompt token 1 is 1024, past the vocabulary's 1024 tokens"),
    (["--prompt", "1,,2"], "--prompt wants"),
    (["--prompt", ""], "--prompt wants"),
    (["-n", "-1"], "-n wants a number"),
    (["--batch", "0"], "--batch wants a number from 1 to 512, not '0'"),
    (["--batch", "513"], "--batch wants a number from 1 to 512, not '513'"),
])
def test_forward_refuses_bad_arguments(args, says):
    out = subprocess.run([need(FORWARD), need(DEMO), *args], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode != 0 and says in out.stderr, out.stderr
