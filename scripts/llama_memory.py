#!/usr/bin/env python3
"""Record what llama.cpp allocates for the KV cache and recurrent state, family by family.

For each architecture in FAMILIES this writes a small GGUF with zero weights (the tensors it
needs are found by asking llama.cpp: a missing tensor or a wrong shape is named in its error,
and the file is written again until it loads), lets llama.cpp create contexts at several sizes,
cache types, sequence counts and micro-batches, and writes what it allocated, byte for byte, to
tests/memory/ALIAS.json beside the model's header (`tensormap header --arrays`), from which
the tests rebuild the file with `tensormap write --from-header`.

Needs npm (node-llama-cpp's prebuilt libllama and its source bundle) and a C compiler:

    scripts/llama_memory.py [--work /tmp/llama-memory] [ALIAS...]

The tests never run this; they read what it recorded."""
import argparse
import json
import os
import re
import struct
import subprocess
import sys

NODE_LLAMA_CPP = "3.21.1"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ---- the families: metadata (without the "ARCH." prefix) and what to ask of each ----------
# Small dimensions on purpose: they load in a blink, and every rule is still exercised (two
# key/value heads against four query heads, a window smaller than the contexts asked for).
BASE = {
    "context_length": 4096, "embedding_length": 128, "block_count": 4,
    "feed_forward_length": 128, "attention.head_count": 4, "attention.head_count_kv": 2,
    "attention.layer_norm_rms_epsilon": 1e-6, "rope.freq_base": 10000.0,
}
CONTEXTS = [1, 100, 1000, 4096, 32768, 0]  # 0: the trained context
FAMILIES = {
    "llama": ("llama", {}),
    "qwen2": ("qwen2", {}),
    "qwen3": ("qwen3", {"attention.key_length": 64, "attention.value_length": 64}),
    "gemma2": ("gemma2", {"attention.sliding_window": 64, "attention.key_length": 32,
                          "attention.value_length": 32, "attn_logit_softcapping": 50.0,
                          "final_logit_softcapping": 30.0}),
    "gemma3": ("gemma3", {"attention.sliding_window": 128, "block_count": 7,
                          "attention.key_length": 32, "attention.value_length": 32}),
    "cohere2": ("cohere2", {"attention.sliding_window": 64, "attention.layer_norm_epsilon": 1e-5,
                            "logit_scale": 1.0, "rope.dimension_count": 16}),
    "gpt-oss": ("gpt-oss", {"attention.sliding_window": 128, "expert_count": 4,
                            "expert_used_count": 2, "expert_feed_forward_length": 64,
                            "attention.key_length": 32, "attention.value_length": 32}),
    "llama4": ("llama4", {"expert_count": 4, "expert_used_count": 1,
                          "expert_feed_forward_length": 64, "interleave_moe_layer_step": 1,
                          "no_rope_layer_step": 4}),
    "deepseek2": ("deepseek2", {"attention.head_count_kv": 1, "attention.q_lora_rank": 32,
                                "attention.kv_lora_rank": 64, "attention.key_length": 96,
                                "attention.value_length": 64, "attention.key_length_mla": 48,
                                "attention.value_length_mla": 16, "rope.dimension_count": 32,
                                "leading_dense_block_count": 1, "expert_count": 4,
                                "expert_used_count": 2, "expert_shared_count": 1,
                                "expert_feed_forward_length": 32, "expert_weights_scale": 1.0}),
    "gemma3n": ("gemma3n", {"block_count": 22, "attention.sliding_window": 64,
                            "attention.key_length": 32, "attention.value_length": 32,
                            "altup.active_idx": 0, "altup.num_inputs": 4,
                            "embedding_length_per_layer_input": 16,
                            "activation_sparsity_scale": [0.0] * 22}),
    "deepseek2-mtp": ("deepseek2", {"block_count": 5, "nextn_predict_layers": 1,
                                    "attention.head_count_kv": 1, "attention.q_lora_rank": 32,
                                    "attention.kv_lora_rank": 64, "attention.key_length": 96,
                                    "attention.value_length": 64, "attention.key_length_mla": 48,
                                    "attention.value_length_mla": 16, "rope.dimension_count": 32,
                                    "leading_dense_block_count": 1, "expert_count": 4,
                                    "expert_used_count": 2, "expert_shared_count": 1,
                                    "expert_feed_forward_length": 32,
                                    "expert_weights_scale": 1.0}),
    "openelm": ("openelm", {"attention.head_count": [2, 4, 4, 8],
                            "attention.head_count_kv": [1, 2, 2, 4],
                            "feed_forward_length": [128, 128, 192, 192],
                            "attention.key_length": 32, "attention.value_length": 32,
                            "rope.dimension_count": 16}),
    "mamba": ("mamba", {"ssm.conv_kernel": 4, "ssm.inner_size": 256, "ssm.state_size": 16,
                        "ssm.time_step_rank": 4, "attention.head_count": 0,
                        "attention.head_count_kv": 0, "feed_forward_length": 0}),
    "mamba2": ("mamba2", {"ssm.conv_kernel": 4, "ssm.inner_size": 128, "ssm.state_size": 16,
                          "ssm.time_step_rank": 8, "ssm.group_count": 2,
                          "attention.head_count": 0, "attention.head_count_kv": 0,
                          "feed_forward_length": 0}),
    "rwkv6": ("rwkv6", {"wkv.head_size": 16, "time_mix_extra_dim": 8, "time_decay_extra_dim": 8,
                        "rescale_every_n_layers": 6, "attention.layer_norm_epsilon": 1e-5,
                        "attention.head_count": 0, "attention.head_count_kv": 0,
                        "feed_forward_length": 224}),
    "rwkv7": ("rwkv7", {"wkv.head_size": 16, "attention.decay_lora_rank": 8,
                        "attention.iclr_lora_rank": 8, "attention.value_residual_mix_lora_rank": 8,
                        "attention.gate_lora_rank": 8, "attention.layer_norm_epsilon": 1e-5,
                        "attention.head_count": 0, "attention.head_count_kv": 0,
                        "feed_forward_length": 224}),
    "jamba": ("jamba", {"block_count": 8, "ssm.conv_kernel": 4, "ssm.inner_size": 256,
                        "ssm.state_size": 16, "ssm.time_step_rank": 4,
                        "attention.head_count_kv": [0, 0, 0, 0, 2, 0, 0, 0],
                        "expert_count": 4, "expert_used_count": 2}),
    "falcon-h1": ("falcon-h1", {"ssm.conv_kernel": 4, "ssm.inner_size": 128,
                                "ssm.state_size": 16, "ssm.time_step_rank": 8,
                                "ssm.group_count": 1, "attention.key_length": 32,
                                "attention.value_length": 32}),
    "granitehybrid": ("granitehybrid", {"ssm.conv_kernel": 4, "ssm.inner_size": 256,
                                        "ssm.state_size": 16, "ssm.time_step_rank": 8,
                                        "ssm.group_count": 1,
                                        "attention.head_count_kv": [0, 2, 0, 2],
                                        "attention.scale": 0.125, "embedding_scale": 1.0,
                                        "residual_scale": 1.0, "logit_scale": 1.0}),
    "qwen3next": ("qwen3next", {"ssm.conv_kernel": 4, "ssm.inner_size": 64,
                                "ssm.state_size": 16, "ssm.time_step_rank": 4,
                                "ssm.group_count": 2, "attention.key_length": 32,
                                "attention.value_length": 32, "full_attention_interval": 4,
                                "expert_count": 4, "expert_used_count": 2,
                                "expert_feed_forward_length": 32,
                                "expert_shared_feed_forward_length": 32,
                                "rope.dimension_count": 8}),
    "lfm2": ("lfm2", {"shortconv.l_cache": 3,
                      "attention.head_count_kv": [0, 2, 0, 2]}),
    "lfm2-swa": ("lfm2", {"shortconv.l_cache": 3, "attention.sliding_window": 64,
                          "attention.head_count_kv": [0, 2, 0, 2]}),
    "qwen2moe": ("qwen2moe", {"expert_count": 4, "expert_used_count": 2,
                              "expert_feed_forward_length": 32,
                              "expert_shared_feed_forward_length": 32}),
    "qwen3moe": ("qwen3moe", {"expert_count": 4, "expert_used_count": 2,
                              "expert_feed_forward_length": 32, "attention.key_length": 64,
                              "attention.value_length": 64}),
    "gemma": ("gemma", {"attention.key_length": 32, "attention.value_length": 32}),
    "gemma3-no-window": ("gemma3", {"attention.key_length": 32, "attention.value_length": 32}),
    "mistral3": ("mistral3", {}),
}

# Tensors llama.cpp does not require but whose absence a graph does not survive: a name for
# every layer, or (name, the layers that have it).
OPTIONAL = {"rwkv6": ["blk.{i}.time_mix_lerp_fused.weight"],
            # without it llama.cpp takes the file for a lone MTP head
            "deepseek2-mtp": ["blk.{i}.attn_norm.weight"],
            "falcon-h1": ["blk.{i}.ssm_conv1d.bias"],
            "granitehybrid": [("blk.{i}.ssm_conv1d.bias", [0, 2])],
            "qwen3next": [("blk.{i}.ssm_in.weight", [0, 1, 2])]}


class I32(int):
    """An integer GGUF stores as i32 (token types); other integers are u32."""


# ---- a GGUF writer: the metadata given, the tensors llama.cpp asks for, zero weights -------
def gguf_header(kv, tensors, types=None):
    """The header (padded to the data) and the data's size; tensors f32 unless types names
    another ggml type id for them."""
    def s(x):
        b = x.encode()
        return struct.pack("<Q", len(b)) + b

    def value(v):
        if isinstance(v, I32):
            return struct.pack("<Ii", 5, int(v))
        if isinstance(v, bool):
            return struct.pack("<I?", 7, v)
        if isinstance(v, int):
            return struct.pack("<Ii", 5, v) if v < 0 else struct.pack("<II", 4, v)
        if isinstance(v, float):
            return struct.pack("<If", 6, v)
        if isinstance(v, str):
            return struct.pack("<I", 8) + s(v)
        first = value(v[0])[:4]
        out = struct.pack("<I", 9) + first + struct.pack("<Q", len(v))
        return out + b"".join(value(e)[4:] for e in v)

    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    for k, v in kv.items():
        out += s(k) + value(v)
    offset = 0
    for name, shape in tensors:
        out += s(name) + struct.pack("<I", len(shape)) + struct.pack("<%dQ" % len(shape), *shape)
        type_id, block_elems, block_bytes = (types or {}).get(name, (0, 1, 4))  # f32
        out += struct.pack("<IQ", type_id, offset)
        n = 1
        for d in shape:
            n *= d
        offset += (n // block_elems * block_bytes + 31) // 32 * 32
    out += b"\0" * (-len(out) % 32)
    return out, offset


def gguf_bytes(kv, tensors):
    header, data = gguf_header(kv, tensors)
    return header + b"\0" * data


def metadata(arch, extra):
    kv = {"general.architecture": arch, "general.name": "tensormap memory probe (%s)" % arch}
    for k, v in {**BASE, **extra}.items():
        n = kv.setdefault("%s.%s" % (arch, k), v)
        if k in extra:
            kv["%s.%s" % (arch, k)] = v
    tokens = ["<unk>", "<s>", "</s>"] + ["t%d" % i for i in range(29)]
    kv["tokenizer.ggml.model"] = "llama"
    kv["tokenizer.ggml.tokens"] = tokens
    kv["tokenizer.ggml.scores"] = [0.0] * len(tokens)
    kv["tokenizer.ggml.token_type"] = [I32(t) for t in [2, 3, 3] + [1] * 29]
    return {k: v for k, v in kv.items() if not (isinstance(v, int) and v == 0 and
                                                  k.endswith(".sliding_window"))}


def load(probe, env, path, configs=()):
    args = [probe, path] + [str(x) for c in configs for x in c]
    p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def build(probe, env, alias, arch, extra, path):
    """Write the model until llama.cpp loads it; the tensors come from its errors."""
    kv = metadata(arch, extra)
    # optional tensors the graph needs anyway: found by the same errors once named
    tensors = [(n.format(i=i), [1]) for n, layers in
               ((o, range(kv[arch + ".block_count"])) if isinstance(o, str) else o
                for o in OPTIONAL.get(alias, ()))
               for i in layers]
    for _ in range(3000):
        with open(path, "wb") as f:
            f.write(gguf_bytes(kv, tensors))
        rc, out, err = load(probe, env, path)
        if rc == 0:
            return kv, tensors
        m = re.search(r"missing tensor '([^']+)'|tensor '([^']+)' not found", err)
        if m:
            tensors.append((m.group(1) or m.group(2), [1]))
            continue
        m = re.search(r"tensor '([^']+)' has wrong shape; expected \[?([\d, ]*\d)", err)
        if m:
            shape = [int(x) for x in m.group(2).split(",")]
            while len(shape) > 1 and shape[-1] == 1:
                shape.pop()
            tensors = [(n, shape if n == m.group(1) else s) for n, s in tensors]
            continue
        m = re.search(r"key not found in model: (\S+)", err)
        last = [l for l in err.splitlines() if "error" in l.lower() or "assert" in l.lower()]
        sys.exit("%s: llama.cpp does not load it: %s" % (alias, (last or err.splitlines()[-3:])))
    sys.exit("%s: no end to llama.cpp's missing tensors" % alias)


def write_record(f, rec):
    """One allocation a line, the header on one line: readable, and small."""
    f.write('{"llama_cpp": %s, "architecture": %s,\n "allocations": [\n  ' %
            (json.dumps(rec["llama_cpp"]), json.dumps(rec["architecture"])))
    f.write(",\n  ".join(json.dumps(a) for a in rec["allocations"]))
    f.write('\n ],\n "header": %s}\n' % json.dumps(rec["header"], separators=(",", ":")))


def configs(trained, recurrent, swa):
    """What to ask for: every context in f16, the cache types at one context, sequences (in
    streams of their own, and unified), and for sliding windows the micro-batch and the
    full-size switch. (n_ctx, n_seq, type_k, type_v, n_ubatch, swa_full, kv_unified)"""
    out = [(c, 1, "f16", "f16", 512, 0, 0) for c in CONTEXTS]
    if not recurrent:
        for t in ["f32", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl"]:
            out.append((4096, 1, t, t, 512, 0, 0))
        out.append((4096, 1, "q8_0", "f16", 512, 0, 0))
    out += [(4096, 4, "f16", "f16", 512, 0, 0), (1000, 3, "f16", "f16", 512, 0, 0),
            (100, 2, "f16", "f16", 512, 0, 0), (1000, 3, "f16", "f16", 512, 0, 1),
            (4096, 4, "f16", "f16", 512, 0, 1)]
    if swa:
        out += [(4096, 1, "f16", "f16", 64, 0, 0), (4096, 1, "f16", "f16", 2048, 0, 0),
                (4096, 1, "f16", "f16", 512, 1, 0), (32768, 4, "f16", "f16", 256, 0, 0),
                (32768, 4, "f16", "f16", 256, 0, 1)]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default="/tmp/llama-memory")
    ap.add_argument("alias", nargs="*")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    pkg = os.path.join(a.work, "node_modules", "node-llama-cpp")
    if not os.path.isdir(pkg):
        subprocess.run(["npm", "i", "-E", "--prefix", a.work, "node-llama-cpp@" + NODE_LLAMA_CPP],
                       check=True)
    bins = os.path.join(a.work, "node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64")
    src = os.path.join(a.work, "llama.cpp")
    if not os.path.isdir(src):
        subprocess.run(["git", "clone", "-q", os.path.join(pkg, "llama", "gitRelease.bundle"), src],
                       check=True)
    release = json.load(open(os.path.join(pkg, "llama", "llama.cpp.info.json")))["tag"]
    lib = [f for f in os.listdir(bins) if f.startswith("libllama.v")][0]
    ggml = [f for f in os.listdir(bins) if f.startswith("libggml.v")][0]
    probe = os.path.join(a.work, "probe")
    subprocess.run(["cc", "-O1", "-o", probe, os.path.join(ROOT, "scripts", "llama_memory", "probe.c"),
                    "-I" + os.path.join(src, "include"), "-I" + os.path.join(src, "ggml", "include"),
                    "-L" + bins, "-l:" + lib, "-l:libggml-base.so", "-l:" + ggml,
                    "-Wl,-rpath," + bins, "-ldl"], check=True)
    env = dict(os.environ, PROBE_BACKENDS=bins)
    tool = os.path.join(ROOT, "build", "tensormap")
    outdir = os.path.join(ROOT, "tests", "memory")
    os.makedirs(outdir, exist_ok=True)
    for alias in a.alias or FAMILIES:
        arch, extra = FAMILIES[alias]
        path = os.path.join(a.work, alias + ".gguf")
        kv, tensors = build(probe, env, alias, arch, extra, path)
        recurrent = arch in ("mamba", "mamba2", "rwkv6", "rwkv7")
        swa = "attention.sliding_window" in extra or arch == "llama4"
        allocations = []
        for c in configs(kv[arch + ".context_length"], recurrent, swa):
            rc, out, err = load(probe, env, path, [c])
            lines = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
            line = lines[0]
            for more in lines[1:]:
                line.update(more)
            if rc != 0:
                # died building its graph (an optional tensor the file lacks), after the cache
                line["graph_built"] = False
            allocations.append(line)
        header = json.loads(subprocess.run([tool, "header", "--arrays", path], check=True,
                                           capture_output=True, text=True).stdout)
        rec = {"llama_cpp": "%s (node-llama-cpp %s, %s)" % (release, NODE_LLAMA_CPP, lib),
               "architecture": arch, "header": header,
               "allocations": allocations}
        with open(os.path.join(outdir, alias + ".json"), "w") as f:
            write_record(f, rec)
        print("%s: %d allocations, %d tensors" % (alias, len(rec["allocations"]), len(tensors)))


if __name__ == "__main__":
    main()
