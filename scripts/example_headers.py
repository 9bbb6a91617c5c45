#!/usr/bin/env python3
"""Write the headers of the two model shapes the README plans memory for, as
`tensormap header --arrays` JSON that `tensormap write --from-header` turns back into a GGUF
(a hole where the weights would be):

    examples/qwen2-7b.header.json    Qwen2-7B's layout: 28 blocks, width 3584, 28 heads over 4
                                     key/value heads of 128, q4_K matrices, a q6_K output
    examples/gemma3-12b.header.json  Gemma-3-12B's: 48 blocks, width 3840, 16 heads over 8 of
                                     256, five of every six layers sliding over 1024 tokens,
                                     the output tied to the q6_K embedding

The dimensions are the published models'; the tokenizer is left out (the vocabulary is the
embedding's row count). Run from the checkout after `make`: scripts/example_headers.py"""
import json
import os
import subprocess
import tempfile

from llama_memory import ROOT, gguf_header

Q4_K, Q6_K = (12, 256, 144), (14, 256, 210)


def qwen2_7b():
    H, FF, V, L, KV = 3584, 18944, 152064, 28, 512
    kv = {"general.architecture": "qwen2", "general.name": "a Qwen2-7B-shaped header",
          "qwen2.block_count": L, "qwen2.context_length": 32768, "qwen2.embedding_length": H,
          "qwen2.feed_forward_length": FF, "qwen2.attention.head_count": 28,
          "qwen2.attention.head_count_kv": 4, "qwen2.rope.freq_base": 1000000.0,
          "qwen2.attention.layer_norm_rms_epsilon": 1e-6}
    t = [("token_embd.weight", [H, V])]
    for i in range(L):
        b = "blk.%d." % i
        t += [(b + "attn_norm.weight", [H]), (b + "attn_q.weight", [H, H]),
              (b + "attn_q.bias", [H]), (b + "attn_k.weight", [H, KV]), (b + "attn_k.bias", [KV]),
              (b + "attn_v.weight", [H, KV]), (b + "attn_v.bias", [KV]),
              (b + "attn_output.weight", [H, H]), (b + "ffn_norm.weight", [H]),
              (b + "ffn_gate.weight", [H, FF]), (b + "ffn_up.weight", [H, FF]),
              (b + "ffn_down.weight", [FF, H])]
    t += [("output_norm.weight", [H]), ("output.weight", [H, V])]
    types = {n: Q4_K for n, s in t if len(s) == 2}
    types["output.weight"] = Q6_K
    return kv, t, types


def gemma3_12b():
    H, FF, V, L, HD = 3840, 15360, 262144, 48, 256
    kv = {"general.architecture": "gemma3", "general.name": "a Gemma-3-12B-shaped header",
          "gemma3.block_count": L, "gemma3.context_length": 131072, "gemma3.embedding_length": H,
          "gemma3.feed_forward_length": FF, "gemma3.attention.head_count": 16,
          "gemma3.attention.head_count_kv": 8, "gemma3.attention.key_length": HD,
          "gemma3.attention.value_length": HD, "gemma3.attention.sliding_window": 1024,
          "gemma3.rope.freq_base": 1000000.0, "gemma3.attention.layer_norm_rms_epsilon": 1e-6}
    t = [("token_embd.weight", [H, V])]
    for i in range(L):
        b = "blk.%d." % i
        t += [(b + "attn_norm.weight", [H]), (b + "attn_q.weight", [H, 16 * HD]),
              (b + "attn_k.weight", [H, 8 * HD]), (b + "attn_v.weight", [H, 8 * HD]),
              (b + "attn_q_norm.weight", [HD]), (b + "attn_k_norm.weight", [HD]),
              (b + "attn_output.weight", [16 * HD, H]), (b + "post_attention_norm.weight", [H]),
              (b + "ffn_norm.weight", [H]), (b + "ffn_gate.weight", [H, FF]),
              (b + "ffn_up.weight", [H, FF]), (b + "ffn_down.weight", [FF, H]),
              (b + "post_ffw_norm.weight", [H])]
    t += [("output_norm.weight", [H])]
    types = {n: Q4_K for n, s in t if len(s) == 2}
    types["token_embd.weight"] = Q6_K
    return kv, t, types


def main():
    tool = os.path.join(ROOT, "build", "tensormap")
    for name, make in (("qwen2-7b", qwen2_7b), ("gemma3-12b", gemma3_12b)):
        kv, tensors, types = make()
        header, data = gguf_header(kv, tensors, types)
        with tempfile.NamedTemporaryFile(suffix=".gguf") as f:
            f.write(header)
            f.truncate(len(header) + data)  # a hole: no weights written
            f.flush()
            out = subprocess.run([tool, "header", "--arrays", f.name], check=True,
                                 capture_output=True, text=True).stdout
        with open(os.path.join(ROOT, "examples", name + ".header.json"), "w") as o:
            json.dump(json.loads(out), o, indent=1)
            o.write("\n")


if __name__ == "__main__":
    main()
