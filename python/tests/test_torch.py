"""safe_open(framework="pt"): torch tensors in the stored dtype (bf16 as torch.bfloat16) sharing
memory with the file where aligned, which in-place ops may write without faulting or changing
the file (copy-on-write); decoded tensors in float32, float16 or bfloat16; DLPack. Skipped,
saying why, when PyTorch is not installed (Debian: python3-torch; scripts/deps.sh test installs
it)."""

import os
import subprocess
import sys

import numpy as np
import pytest

import tensormap
from conftest import corpus_path
from model_files import in_a_mapping_of
from test_formats import write_safetensors

torch = pytest.importorskip("torch", reason="PyTorch is not installed (apt-get install "
                            "python3-torch): the framework=\"pt\" tests cannot run")

RNG = np.random.default_rng(5)
F16 = RNG.standard_normal((4, 6)).astype("<f2")
BF16_BITS = (RNG.standard_normal((3, 8)).astype("<f4").view("<u4") >> 16).astype("<u2")
I64 = np.array([[2 ** 53 + 1, -7], [2 ** 62, 3]], "<i8")
GOLDEN = corpus_path("golden", "golden-a.gguf")


@pytest.fixture
def st_file(tmp_path):
    path = tmp_path / "model.safetensors"
    write_safetensors(path, {"bf16": ("BF16", BF16_BITS.shape, BF16_BITS.tobytes()),
                             "f16": ("F16", F16.shape, F16.tobytes()),
                             "i64": ("I64", I64.shape, I64.tobytes())})
    return path


def bf16_want():
    return torch.from_numpy(BF16_BITS.view(np.int16).copy()).view(torch.bfloat16)


def test_stored_dtypes_as_torch_tensors(st_file):
    with tensormap.safe_open(st_file, framework="pt") as f:
        b = f.get_tensor("bf16")
        assert b.dtype == torch.bfloat16 and b.shape == BF16_BITS.shape
        assert torch.equal(b, bf16_want())
        h = f.get_tensor("f16")
        assert h.dtype == torch.float16 and torch.equal(h, torch.from_numpy(F16))
        i = f.get_tensor("i64")
        assert i.dtype == torch.int64 and i.tolist() == I64.tolist()
        assert torch.equal(f.get_slice("bf16")[1:, ::-2], bf16_want()[1:].flip(1)[:, ::2])


def test_zero_copy_tensors_may_be_written_and_the_file_is_untouched(st_file):
    before = st_file.read_bytes()
    with tensormap.safe_open(st_file, framework="pt") as f:
        a, b = f.get_tensor("bf16"), f.get_tensor("bf16")
        assert in_a_mapping_of(st_file, a.data_ptr())    # no copy: the file's pages
        a.mul_(2)                                  # copy-on-write: a private page now
        assert torch.equal(a, bf16_want() * 2)
        assert torch.equal(b, bf16_want())         # nor does another tensor see it
        h = f.get_slice("f16")[1:3]
        h.add_(1)
        assert torch.equal(h, torch.from_numpy(F16[1:3]) + 1)
    assert st_file.read_bytes() == before
    with tensormap.safe_open(st_file, framework="np") as f:   # a fresh view: the file's bytes
        assert np.array_equal(f.get_tensor("f16"), F16)


def test_torch_writing_through_a_read_only_numpy_view_does_not_crash(st_file):
    """The issue's crash: torch.from_numpy of get_raw's read-only array (torch only warns) then
    mul_, which used to write into the library's PROT_READ mapping and kill the interpreter.
    Run in a child, so a crash fails this test instead of ending the suite."""
    code = f"""
import warnings, torch, tensormap
warnings.simplefilter("ignore")
f = tensormap.open({str(st_file)!r})
t = torch.from_numpy(f.get_raw("bf16")).view(torch.bfloat16)
t.mul_(2)
s = tensormap.safe_open({str(st_file)!r}, framework="np")
torch.from_numpy(s.get_tensor("f16")).mul_(3)
print("survived", f.get_raw("bf16").tobytes() == {BF16_BITS.tobytes()!r})
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=os.environ, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["survived", "True"]


def test_decoded_tensors_in_float32_float16_bfloat16():
    name = "q4_K.rows.weight"
    with tensormap.open(GOLDEN) as whole, tensormap.safe_open(GOLDEN, framework="pt") as f:
        full = torch.from_numpy(whole.get_tensor(name))
        got = f.get_tensor(name)
        assert got.dtype == torch.float32 and torch.equal(got, full)
        for dtype in (torch.float16, torch.bfloat16):
            got = f.get_slice(name, dtype=dtype)[2:5, 256:]
            want = full[2:5, 256:].to(dtype)      # torch's own rounding
            assert got.dtype == dtype
            assert torch.equal(got.view(torch.int16), want.view(torch.int16)), dtype
        got.mul_(2)                               # decoded tensors own their memory


def test_dlpack_shares_the_stored_bytes(st_file):
    with tensormap.safe_open(st_file, framework="np") as f:
        t = torch.from_dlpack(f.get_slice("bf16"))
        assert t.dtype == torch.bfloat16 and torch.equal(t, bf16_want())
        h = torch.from_dlpack(f.get_slice("f16"))
        assert torch.equal(h, torch.from_numpy(F16))
        assert in_a_mapping_of(st_file, h.data_ptr())
        h.mul_(2)                                 # the consumer may write: copy-on-write
        assert np.array_equal(f.get_tensor("f16"), F16)
    with tensormap.safe_open(GOLDEN, framework="np") as f:
        with pytest.raises(BufferError, match="decoded"):
            f.get_slice("q4_K.rows.weight").__dlpack__()
