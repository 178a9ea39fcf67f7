"""The supernet's shared weights: exact extraction, the cost graph, the checkpoint."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import numpy as np
import pytest

from mcunas.boards.catalog import load_board
from mcunas.errors import UserError
from mcunas.supernet.spec import largest, plan_supernet, random_subnet, smallest, subnet_values

pytestmark = pytest.mark.slow

SHAPE = (48, 1, 2)  # a short two-channel series: every elastic choice, small graphs


@pytest.fixture(scope="module")
def supernet():
    from mcunas.tflite.convert import import_tensorflow

    import_tensorflow()
    from mcunas.supernet.model import Supernet

    spec = plan_supernet(SHAPE, 3)
    model = Supernet(spec)
    model.build_all()
    rng = np.random.default_rng(0)
    for w in model.weights:  # move every weight (transforms and BN too) off its initial value
        w.assign(np.asarray(w) + rng.normal(0, 0.05, w.shape).astype(np.float32))
    return model


def _space():
    from mcunas.space import McuSearchSpace

    return McuSearchSpace(SHAPE, 3, ("stages",))


def test_an_extracted_subnet_computes_what_the_supernet_does(supernet) -> None:
    import keras

    from mcunas.supernet.model import controls, standalone_weights

    spec, space = supernet.spec, _space()
    assert len(spec.resolutions) == 2 and max(len(s.kernels) for s in spec.stages) == 3
    x = np.random.default_rng(1).normal(size=(32, *SHAPE)).astype(np.float32)
    rng = random.Random(2)
    for net in [largest(spec), smallest(spec), random_subnet(spec, rng), random_subnet(spec, rng)]:
        ctrl = controls(spec, net)
        supernet(x, ctrl, resolution=net.resolution, recalibrate=True)
        logits = supernet(x, ctrl, resolution=net.resolution)
        expected = keras.ops.convert_to_numpy(keras.ops.softmax(logits))
        model = space.build(space.hyperparameters(**subnet_values(spec, net)))
        model.set_weights(standalone_weights(supernet, net))
        assert np.abs(model.predict(x, verbose=0) - expected).max() < 1e-4, net.key()


def test_a_smaller_kernel_is_the_transformed_centre_of_the_larger(supernet) -> None:
    block = supernet.stage_blocks[0][0].depthwise
    assert block.kernels == (3, 5, 7)
    k7 = np.asarray(block.kernel)
    k5 = np.asarray(block.kernel_for(5))
    centre = k7[1:6].transpose(2, 3, 0, 1).reshape(k7.shape[2], 5)
    moved = centre @ np.asarray(block.transforms[1])
    assert np.allclose(k5.transpose(2, 3, 0, 1).reshape(k7.shape[2], 5), moved, atol=1e-6)


def test_the_cost_graph_is_the_converters_graph(tmp_path: Path) -> None:
    from mcunas.search.trial.isolate import TflmWorker
    from mcunas.supernet.costgraph import subnet_tflite
    from mcunas.tflite.convert import convert_int8, import_tensorflow
    from mcunas.tflite.reader import read_graph

    import_tensorflow()
    spec, space = plan_supernet(SHAPE, 3), _space()
    net = random_subnet(spec, random.Random(5))
    model = space.build(space.hyperparameters(**subnet_values(spec, net)))
    real = convert_int8(model, np.zeros((4, *SHAPE), np.float32))
    fake = subnet_tflite(spec, net)
    g_real, g_fake = read_graph(real), read_graph(fake)
    assert [(o.name, o.output_shape) for o in g_real.ops] == [
        (o.name, o.output_shape) for o in g_fake.ops
    ]
    assert g_real.total_macs == g_fake.total_macs
    worker = TflmWorker(load_board("nano33ble"))
    try:
        a, b = worker.profile(real), worker.profile(fake)
    finally:
        worker.close()
    assert a.latency_ms == pytest.approx(b.latency_ms, rel=1e-6)
    assert a.arena_bytes == pytest.approx(b.arena_bytes, rel=0.01)
    assert a.flash_bytes == pytest.approx(b.flash_bytes, rel=0.02)


def _tiny_data(shape: tuple[int, int, int] = SHAPE):
    from mcunas.data.datasets import load_dataset
    from mcunas.search.training.recipe import Recipe, plan_recipe

    rng = np.random.default_rng(0)
    x = rng.normal(size=(48, *shape)).astype(np.float32)
    y = rng.integers(0, 3, 48)
    d = load_dataset(None)
    d = dataclasses.replace(
        d, x_train=x, y_train=y, x_val=x[:16], y_val=y[:16], num_classes=3, input_shape=shape
    )
    recipe = dataclasses.replace(plan_recipe(d), batch_size=16, repeats=1)
    assert isinstance(recipe, Recipe)
    return d, recipe


def test_the_checkpoint_restores_weights_and_optimizer_and_refuses_another_supernet(
    tmp_path: Path,
) -> None:
    from mcunas.supernet.train import CHECKPOINT, SupernetTrainer

    d, recipe = _tiny_data((16, 1, 2))
    spec = plan_supernet((16, 1, 2), 3)
    first = SupernetTrainer(spec, d, recipe, 2, tmp_path, seed=4)
    first.optimizer.variables[0].assign(7)  # the step counter: restored like the rest
    first.epochs_done = 1
    first.save()
    assert (tmp_path / CHECKPOINT).is_file()
    again = SupernetTrainer(spec, d, recipe, 2, tmp_path, seed=5)  # other initial weights
    assert again.load() == 1
    for a, b in zip(first.model.get_weights(), again.model.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    assert int(again.optimizer.variables[0].numpy()) == 7
    other = SupernetTrainer(spec, d, recipe, 3, tmp_path, seed=4)
    with pytest.raises(UserError, match="another supernet"):
        other.load()
    shrinking = SupernetTrainer(spec, d, recipe, 2, tmp_path, seed=4, schedule="progressive")
    with pytest.raises(UserError, match="another supernet"):
        shrinking.load()
    with pytest.raises(UserError, match="unknown supernet schedule"):
        SupernetTrainer(spec, d, recipe, 2, tmp_path, schedule="shrink")
    (tmp_path / CHECKPOINT).write_bytes(b"not a checkpoint")
    with pytest.raises(UserError, match="not a readable supernet checkpoint"):
        again.load()


def test_inherited_scores_and_extraction(supernet) -> None:
    from mcunas.supernet.subnets import SubnetScorer

    d, _ = _tiny_data()
    scorer = SubnetScorer(supernet, d, seed=0)
    net = random_subnet(supernet.spec, random.Random(7))
    first, second = scorer.score(net), scorer.score(net)
    assert first == second and 0.0 <= first.accuracy <= 1.0 and first.loss > 0
    model = scorer.extract(net, _space())
    probs = model.predict(d.x_val, verbose=0)
    assert np.mean(np.argmax(probs, axis=1) == d.y_val) == pytest.approx(first.accuracy)


def test_progressive_shrinking_opens_one_dimension_per_phase() -> None:
    from mcunas.supernet.train import elastic_dims, within_dims

    phases = [elastic_dims("progressive", e, 8) for e in range(8)]
    assert phases[0] == {"resolution"} == phases[1]
    assert phases[2] == {"resolution", "kernel"}
    assert phases[4] == {"resolution", "kernel", "depth"}
    assert phases[7] == elastic_dims("sandwich", 0, 8) == set(phases[6])
    assert len(phases[6]) == 4
    spec = plan_supernet(SHAPE, 3)
    top, rng = largest(spec), random.Random(1)
    drawn = [random_subnet(spec, rng) for _ in range(50)]
    for dims in phases:
        nets = [within_dims(top, n, dims) for n in drawn]
        for n in nets:
            assert "kernel" in dims or n.kernels == top.kernels
            assert "depth" in dims or n.depths == top.depths
            assert "expansion" in dims or n.expansions == top.expansions
        varied = {n.resolution for n in nets}, {n.kernels for n in nets}
        assert len(varied[0]) == len(spec.resolutions)
        assert ("kernel" in dims) == (len(varied[1]) > 1)
    assert within_dims(top, smallest(spec), phases[0]) == dataclasses.replace(
        top, resolution=max(spec.resolutions)
    )
