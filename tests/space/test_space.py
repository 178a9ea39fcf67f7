"""The search space: hyperparameters, shapes, downsampling, MCU-safe layers, Keras Tuner use."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcunas.errors import UserError

keras = pytest.importorskip("keras")
kt = pytest.importorskip("keras_tuner")

from mcunas.space import FAMILIES, McuSearchSpace  # noqa: E402


def _conv_widths(model: keras.Model) -> list[int]:
    return [layer.filters for layer in model.layers if isinstance(layer, keras.layers.Conv2D)]


def _activations(model: keras.Model) -> set[str]:
    names = set()
    for layer in model.layers:
        act = getattr(layer, "activation", None)
        if act is not None:
            names.add(act.__name__)
    return names


def _smallest_feature_map(model: keras.Model) -> int:
    """The smallest side of any feature map before the head's pooling."""
    sides = []
    for layer in model.layers:
        if isinstance(layer, keras.layers.AveragePooling2D) and layer.output.shape[1:3] == (1, 1):
            break  # the stage family's head pools the whole map
        if len(layer.output.shape) == 4:
            sides.append(min(layer.output.shape[1:3]))
    return min(sides)


@pytest.mark.parametrize("family", FAMILIES)
def test_each_family_builds_a_compiled_mcu_friendly_model(family: str) -> None:
    space = McuSearchSpace((8, 8, 1), 10)
    hp = space.hyperparameters(family=family)
    model = space.build(hp)
    assert model.input_shape == (None, 8, 8, 1)  # free batch size for training
    assert model.output_shape == (None, 10)
    assert isinstance(model.optimizer, keras.optimizers.Adam)
    assert model.loss == "sparse_categorical_crossentropy"
    assert all(w % 8 == 0 for w in _conv_widths(model))
    assert _activations(model) <= {"relu", "relu6", "linear", "softmax"}
    assert space.describe(hp).startswith(f"{family}: ")
    assert model.name == f"mcunas_{family}"


def test_transformer_tokens_are_the_input_rows() -> None:
    space = McuSearchSpace((8, 8, 1), 10, families=("transformer",))
    model = space.build(space.hyperparameters(tf_d_model=24, tf_heads=4, tf_norm="layer"))
    reshape = next(x for x in model.layers if isinstance(x, keras.layers.Reshape))
    assert reshape.output.shape[1:] == (8, 8)
    assert any(isinstance(x, keras.layers.LayerNormalization) for x in model.layers)
    mha = next(x for x in model.layers if isinstance(x, keras.layers.MultiHeadAttention))
    assert mha.num_heads == 4


def test_hybrid_downsamples_to_the_token_budget() -> None:
    space = McuSearchSpace((96, 96, 3), 5, families=("hybrid",))
    for tokens in (16, 64):
        model = space.build(space.hyperparameters(hy_max_tokens=tokens, hy_conv_blocks=0))
        reshape = next(x for x in model.layers if isinstance(x, keras.layers.Reshape))
        assert reshape.output.shape[1] <= tokens


@pytest.mark.parametrize("shape", [(8, 8, 1), (49, 40, 1), (96, 96, 3)])
def test_random_points_downsample_sensibly(shape: tuple[int, int, int]) -> None:
    space = McuSearchSpace(shape, 4)
    for seed in range(6):
        hp = space.sample(seed)
        model = space.build(hp)
        assert model.output_shape == (None, 4), space.describe(hp)
        assert _smallest_feature_map(model) >= 2, space.describe(hp)
        convs = [x for x in model.layers if len(x.output.shape) == 4]
        if convs:  # large inputs shrink to <= 24 per side before the head
            assert max(convs[-1].output.shape[1:3]) <= 25, space.describe(hp)


def test_sample_is_reproducible_and_covers_families() -> None:
    space = McuSearchSpace((8, 8, 1), 10)
    assert space.sample(7).values == space.sample(7).values
    families = {space.sample(s).get("family") for s in range(30)}
    assert families == set(FAMILIES)
    hp = space.sample(11)
    prefix = {"dsconv": "ds_", "mbconv": "mb_", "transformer": "tf_", "hybrid": "hy_"}
    others = [p for f, p in prefix.items() if f not in (hp.get("family"), "transformer")]
    assert not [k for k in hp.values if any(k.startswith(p) for p in others)]


def test_bad_hyperparameters_and_families() -> None:
    space = McuSearchSpace((8, 8, 1), 10, families=("dsconv", "mbconv"))
    with pytest.raises(UserError, match="No hyperparameter 'nope'"):
        space.hyperparameters(nope=1)
    with pytest.raises(UserError, match="ds_width_0=12"):
        space.hyperparameters(ds_width_0=12)
    with pytest.raises(UserError, match="family=.transformer"):
        space.hyperparameters(family="transformer")
    with pytest.raises(UserError, match="Unknown model family"):
        McuSearchSpace((8, 8, 1), 10, families=("resnet",))
    with pytest.raises(UserError, match="2 classes"):
        McuSearchSpace((8, 8, 1), 1)


def _space_of(hps: kt.HyperParameters) -> set:
    """Each hyperparameter's name and conditions, comparable across two spaces."""
    import json

    return {
        (h.name, json.dumps([c.get_config() for c in h.conditions], default=str)) for h in hps.space
    }


@pytest.mark.slow  # builds every family's Keras model (TensorFlow)
def test_keras_tuner_discovers_every_conditional_hyperparameter(tmp_path: Path) -> None:
    space = McuSearchSpace((8, 8, 1), 10)
    tuner = kt.RandomSearch(
        space,
        objective="val_accuracy",
        max_trials=1,
        directory=str(tmp_path),
        project_name="t",
        seed=0,
    )
    names = {hp.name for hp in tuner.oracle.get_space().space}
    assert {"family", "ds_width_3", "mb_expansion_3", "tf_norm", "hy_max_tokens"} <= names
    # the search's tuner declares the space in one pass: it must be the space found here
    declared = kt.HyperParameters()
    space.declare_hyperparameters(declared)
    assert _space_of(tuner.oracle.get_space()) == _space_of(declared)
    trial = tuner.oracle.create_trial("t0")
    model = space.build(trial.hyperparameters)
    assert model.output_shape == (None, 10)
