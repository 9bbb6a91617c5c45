"""The other forms tm_open takes, through Python: safetensors, a checkpoint's index.json and its
shards; and ollama:NAME, resolved by the package as the tool resolves it."""

import json
import os

import numpy as np
import pytest

import tensormap
from conftest import corpus_path


def write_safetensors(path, tensors, metadata=None):
    """tensors: name -> (dtype name, shape, raw bytes). Data in the given order."""
    header, data = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(len(text).to_bytes(8, "little") + text + data)


def sample():
    rng = np.random.default_rng(14)
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    b = rng.standard_normal((2, 8)).astype(np.float16)
    c = rng.standard_normal(6).astype(np.float32)
    c_bf16 = (c.view(np.uint32) >> 16).astype(np.uint16)   # truncated: exact in bf16
    c_want = (c_bf16.astype(np.uint32) << 16).view(np.float32)
    tensors = {"a": ("F32", a.shape, a.tobytes()), "b": ("F16", b.shape, b.tobytes()),
               "c": ("BF16", c.shape, c_bf16.tobytes())}
    want = {"a": a, "b": b.astype(np.float32), "c": c_want}
    return tensors, want


def check(f, names, want):
    assert f.keys() == names
    for name in names:
        got = f.get_tensor(name)
        assert got.shape == want[name].shape, name   # the file's own (PyTorch) order
        assert np.array_equal(got.view(np.uint32), want[name].view(np.uint32)), name
        assert f.info(name)["shape"] == want[name].shape


def test_safetensors(tmp_path):
    tensors, want = sample()
    path = tmp_path / "model.safetensors"
    write_safetensors(path, tensors, {"format": "pt"})
    with tensormap.open(path) as f:
        check(f, ["a", "b", "c"], want)
        assert f.metadata() == {"format": "pt"}
        assert f.get_rows("a", 4, 6).shape == (2, 5)
        assert np.array_equal(f.get_rows("a", 4, 6), want["a"].reshape(-1, 5)[4:6])
        raw = f.get_raw("b")
        assert raw.tobytes() == tensors["b"][2] and not raw.flags.writeable
        assert f.info("b")["type"] == "f16" and f.info("b")["nbytes"] == 32


def test_sharded_checkpoint(tmp_path):
    tensors, want = sample()
    shard_names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    write_safetensors(tmp_path / shard_names[0], {"a": tensors["a"]})
    write_safetensors(tmp_path / shard_names[1], {"b": tensors["b"], "c": tensors["c"]})
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 0}, "weight_map": {
        "a": shard_names[0], "b": shard_names[1], "c": shard_names[1]}}))
    for path, kw in ((index, {}), (tmp_path / shard_names[1], {"all_shards": True})):
        with tensormap.open(path, **kw) as f:
            assert sorted(f.keys()) == ["a", "b", "c"]
            check(f, f.keys(), want)
            assert [os.path.basename(p) for p in f.shards()] == shard_names
            assert [f.info(n)["shard"] for n in "abc"] == [0, 1, 1]
            second = tmp_path / shard_names[1]
            info = f.info("c")
            assert f.get_raw("c").tobytes() == \
                second.read_bytes()[info["file_offset"]:info["file_offset"] + info["nbytes"]]
    with tensormap.open(tmp_path / shard_names[1]) as f:   # a shard alone
        assert f.keys() == ["b", "c"]


def ollama_store(tmp_path, digest_hex):
    manifest = tmp_path / "manifests" / "registry.ollama.ai" / "library" / "golden" / "latest"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"layers": [
        {"mediaType": "application/vnd.ollama.image.license", "digest": "sha256:" + "0" * 64},
        {"mediaType": "application/vnd.ollama.image.model", "digest": "sha256:" + digest_hex}]}))
    (tmp_path / "blobs").mkdir()
    return tmp_path / "blobs" / ("sha256-" + digest_hex)


def test_ollama_name(tmp_path, monkeypatch):
    blob = ollama_store(tmp_path, "ab" * 32)
    blob.write_bytes(open(corpus_path("golden", "golden-a.gguf"), "rb").read())
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path))
    for spec in ("ollama:golden", "ollama:golden:latest"):
        with tensormap.open(spec) as f:
            assert f.shards() == [str(blob)]
            assert f.metadata()["general.architecture"] == "golden"
    for spec, message in (("ollama:../golden", "is not a model name"),
                          ("ollama:golden:v2", "no model 'golden:v2'"),
                          ("ollama:a/b/c/d", "is not a model name")):
        with pytest.raises(tensormap.FileError) as e:
            tensormap.open(spec)
        assert message in e.value.message and e.value.path == spec
    blob.unlink()
    with pytest.raises(tensormap.FileError) as e:
        tensormap.open("ollama:golden")
    assert "which is missing" in e.value.message
