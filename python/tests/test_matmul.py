"""f.matmul against numpy's float64 product of the decoded weights (get_tensor, itself checked bit
for bit against ggml), within the bounds docs/matvec.md states, and against f.matvec column for
column, bit for bit."""

import numpy as np
import pytest

import tensormap
from conftest import corpus_path, golden_tensors


def weights():
    return [r for r in golden_tensors("golden-a") if r["name"].endswith(".rows.weight")
            and tensormap.can_decode(r["type"])]


@pytest.mark.parametrize("n", [1, 7, 33])
def test_matmul_within_the_bounds_and_equal_to_matvec(n):
    rng = np.random.default_rng(23 + n)
    checked = 0
    with tensormap.open(corpus_path("golden", "golden-a.gguf")) as f:
        for row in weights():
            w = f.get_tensor(row["name"]).astype(np.float64)
            X = rng.standard_normal((w.shape[1], n)).astype(np.float32)
            exact = w @ X.astype(np.float64)
            # the scale of Y as a whole: a column's own max|W x| can be tiny next to its terms
            # (seed 56, n = 33: q8_0 column 5 has max 0.067, and tm_matvec's error for it is 4.6e-6
            # of that on AVX-512; the 1e-6 column bound is matvec's, reported, not matmul's)
            scale = np.abs(exact).max()
            for mode in ("f32", "q8"):
                Y = f.matmul(row["name"], X, mode=mode)
                assert Y.dtype == np.float32 and Y.shape == (w.shape[0], n)
                if mode == "f32":
                    bound = 1e-6 * scale
                else:   # x rounded to 8 bits per block, then float32 sums (docs/matvec.md)
                    bound = (np.abs(w).sum(axis=1)[:, None] * np.abs(X).max(axis=0) / 254
                             + 1e-4 * scale)
                assert np.all(np.abs(Y - exact) <= bound), (row["name"], mode)
                for j in range(n):
                    assert np.array_equal(Y[:, j], f.matvec(row["name"], X[:, j], mode=mode)), \
                        (row["name"], mode, j)
            checked += 1
    assert checked >= 13


def test_matmul_refuses_wrong_shapes_and_modes():
    with tensormap.open(corpus_path("golden", "golden-a.gguf")) as f:
        k = f.get_tensor("q8_0.rows.weight").shape[1]
        X = np.ones((k, 3), np.float32)
        for bad, mode in ((X[:-1], "f32"), (X[:, :0], "f32"), (X[:, 0], "f32"), (X, "q4")):
            with pytest.raises(tensormap.InvalidError) as e:
                f.matmul("q8_0.rows.weight", bad, mode=mode)
            assert e.value.code == "INVALID_ARG"
