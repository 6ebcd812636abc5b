"""moebench.prepare_weights: w13 (and bias13) re-laid between the split and interleaved row orders,
and a split checkpoint's w13 prepared for an interleaved layer giving the split layer's output on
the cpu backend; what it refuses."""

import numpy as np
import pytest

import moebench
from conftest import cpu_kernel, poisoned

T, E, k, D, I = 9, 4, 2, 64, 32
OAI = {"experts": E, "topk": k, "hidden": D, "intermediate": I, "align": 4, "dtype": "f16",
       "activation": "swiglu_oai", "limit": 1.5}


def interleaved_by_hand(w, block):
    """Gate rows c and up rows c of [E, 2I, ...] alternating in blocks: written out with slices."""
    gate, up = w[:, :I], w[:, I:]
    parts = []
    for b in range(0, I, block):
        parts += [gate[:, b:b + block], up[:, b:b + block]]
    return np.concatenate(parts, axis=1)


@pytest.mark.parametrize("block", [1, 4, 32])
def test_split_to_interleaved_and_back(rng, block):
    w = rng.standard_normal((E, 2 * I, D)).astype(np.float16)
    out = poisoned(w.shape, np.float16)
    moebench.prepare_weights(w, out, "interleaved", block)
    assert np.array_equal(out, interleaved_by_hand(w, block))
    back = poisoned(w.shape, np.float16)
    moebench.prepare_weights(out, back, "split", 1, from_layout="interleaved", from_block=block)
    assert np.array_equal(back, w)
    b = rng.standard_normal((E, 2 * I)).astype(np.float32)
    bo = poisoned(b.shape, np.float32)
    moebench.prepare_weights(b, bo, "interleaved", block)
    assert np.array_equal(bo, interleaved_by_hand(b, block))


@pytest.mark.parametrize("block", [1, 8])
def test_a_prepared_split_layer_gives_the_split_layers_output(rng, block):
    logits = rng.standard_normal((T, E)).astype(np.float16)
    x = rng.standard_normal((T, D)).astype(np.float16)
    w13 = (rng.standard_normal((E, 2 * I, D)) * 0.3).astype(np.float16)
    w2 = (rng.standard_normal((E, D, I)) * 0.2).astype(np.float16)

    def layer(problem, w):
        L = cpu_kernel("moe-layer", problem)
        out = poisoned((T, D), np.float16)
        moebench.moe_layer(L, logits, None, x, w, w2, out, np.zeros(max(1, L.workspace_bytes(T)), np.uint8))
        return out

    split = layer(OAI, w13)
    assert np.all(np.isfinite(split))
    inter = {**OAI, "w13_layout": "interleaved", "w13_block": block}
    prepared = poisoned(w13.shape, np.float16)
    moebench.prepare_weights(w13, prepared, inter["w13_layout"], inter["w13_block"])
    assert np.array_equal(layer(inter, prepared), split)
    # The unprepared split rows read as interleaved are another layer.
    assert not np.array_equal(layer(inter, w13), split)


def test_bad_layouts_shapes_and_outputs_are_refused(rng):
    w = rng.standard_normal((E, 2 * I, D)).astype(np.float16)
    with pytest.raises(ValueError, match="block 5 does not divide the 32"):
        moebench.prepare_weights(w, np.empty_like(w), "interleaved", 5)
    with pytest.raises(ValueError, match="'zigzag' is not a w13 layout"):
        moebench.prepare_weights(w, np.empty_like(w), "zigzag", 1)
    with pytest.raises(ValueError, match="input's dtype and shape"):
        moebench.prepare_weights(w, np.empty(w.shape, np.float32), "interleaved", 1)
    with pytest.raises(ValueError, match="overlaps the input"):
        moebench.prepare_weights(w, w, "interleaved", 1)
    ro = np.empty_like(w)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        moebench.prepare_weights(w, ro, "interleaved", 1)
