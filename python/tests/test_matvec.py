"""f.matvec against numpy's float64 product of the decoded weights (get_tensor, itself checked bit
for bit against ggml), within the bounds include/tensormap.h and docs/matvec.md state."""

import numpy as np
import pytest

import tensormap
from conftest import corpus_path, golden_tensors


def weights():
    return [r for r in golden_tensors("golden-a") if r["name"].endswith(".rows.weight")
            and tensormap.can_decode(r["type"])]


def test_matvec_f32_and_q8_within_their_bounds():
    rng = np.random.default_rng(17)
    checked = 0
    with tensormap.open(corpus_path("golden", "golden-a.gguf")) as f:
        for row in weights():
            w = f.get_tensor(row["name"]).astype(np.float64)
            x = rng.standard_normal(w.shape[1]).astype(np.float32)
            exact = w @ x.astype(np.float64)
            scale = np.abs(exact).max()
            y = f.matvec(row["name"], x)
            assert y.dtype == np.float32 and y.shape == (w.shape[0],)
            assert np.abs(y - exact).max() <= 1e-6 * scale, row["name"]
            # q8: x rounded to 8-bit blocks (scale at most max|x|/127, so each value off by at
            # most half of it), then float32 sums: ggml's bound (docs/matvec.md)
            yq = f.matvec(row["name"], x, mode="q8")
            bound = np.abs(w).sum(axis=1) * np.abs(x).max() / 254 + 1e-4 * scale
            assert np.all(np.abs(yq - exact) <= bound), row["name"]
            checked += 1
    assert checked >= 13


def test_matvec_takes_any_array_like_and_refuses_wrong_sizes():
    with tensormap.open(corpus_path("golden", "golden-a.gguf")) as f:
        w = f.get_tensor("q8_0.rows.weight").astype(np.float64)
        x = np.linspace(-1, 1, w.shape[1])        # float64, converted
        assert np.allclose(f.matvec("q8_0.rows.weight", list(x)), w @ x, rtol=0, atol=1e-5)
        for bad, mode in ((x[:-1], "f32"), (x.reshape(2, -1), "f32"), (x, "q4")):
            with pytest.raises(tensormap.InvalidError) as e:
                f.matvec("q8_0.rows.weight", bad, mode=mode)
            assert e.value.code == "INVALID_ARG"
