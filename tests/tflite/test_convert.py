"""Batch-1 rebuild, INT8 conversion, TFLite Micro accuracy and the C sources, per family."""

from __future__ import annotations

import re
import zlib
from pathlib import Path

import numpy as np
import pytest

from mcunas.errors import CandidateError
from mcunas.tflite.convert import convert_int8, to_inference_model
from mcunas.tflite.csource import model_crc32, resolver_methods, write_model_sources
from mcunas.tflite.evaluate import int8_accuracy, int8_predict, int8_scores, quantize_inputs
from mcunas.tflite.kernels import TFLM_OPS
from mcunas.tflite.reader import read_graph
from mcunas.tflite.resolver_ops import RESOLVER_METHODS

keras = pytest.importorskip("keras")

from mcunas.data.datasets import load_dataset  # noqa: E402
from mcunas.space import FAMILIES, McuSearchSpace  # noqa: E402

pytestmark = pytest.mark.slow
TRAIN_SLICE = 1000


@pytest.fixture(scope="module")
def digits():  # noqa: ANN201
    return load_dataset(seed=0)


@pytest.fixture(scope="module")
def space(digits) -> McuSearchSpace:  # noqa: ANN001
    return McuSearchSpace(digits.input_shape, digits.num_classes)


@pytest.fixture(scope="module")
def converted(digits, space) -> dict[str, tuple[float, bytes]]:  # noqa: ANN001
    """Each family at its default hyperparameters, trained briefly: (float acc, int8 model)."""
    out = {}
    for family in FAMILIES:
        keras.utils.set_random_seed(0)
        model = space.build(space.hyperparameters(family=family))
        model.fit(
            digits.x_train[:TRAIN_SLICE],
            digits.y_train[:TRAIN_SLICE],
            epochs=2,
            batch_size=32,
            verbose=0,
        )
        scores = np.asarray(model(digits.x_val, training=False))  # eager: no tracing cost
        float_acc = float(np.mean(scores.argmax(-1) == digits.y_val))
        inference = to_inference_model(model)
        assert inference.input_shape == (1, 8, 8, 1)
        for old, new in zip(model.get_weights(), inference.get_weights(), strict=True):
            np.testing.assert_array_equal(old, new)
        np.testing.assert_allclose(
            scores[:1], np.asarray(inference(digits.x_val[:1], training=False)), atol=1e-5
        )
        out[family] = (float_acc, convert_int8(inference, digits.representative()))
    return out


@pytest.mark.parametrize("family", FAMILIES)
def test_family_converts_to_runnable_int8_close_to_float(converted, digits, family) -> None:  # noqa: ANN001
    float_acc, model_bytes = converted[family]
    graph = read_graph(model_bytes)
    assert set(graph.op_names()) <= TFLM_OPS
    assert graph.inputs[0].shape[0] == 1 and graph.inputs[0].dtype == "int8"
    assert graph.outputs[0].dtype == "int8"
    assert graph.is_integer_only  # default norm is batch norm: folds into int8 ops
    int8_acc, loss = int8_scores(model_bytes, digits.x_val, digits.y_val)
    assert int8_acc == int8_accuracy(model_bytes, digits.x_val, digits.y_val)
    assert float_acc > 0.5, f"{family} float accuracy {float_acc:.3f}: trained too little"
    assert abs(int8_acc - float_acc) <= 0.05, (family, float_acc, int8_acc)
    chance = np.log(digits.num_classes)  # the loss of a model that knows nothing
    assert 0.0 < loss < chance, (family, loss)


def test_random_hyperparameters_convert_and_load(digits, space) -> None:  # noqa: ANN001
    rep = digits.representative(32)
    crashed = 0
    for seed in range(8):
        hp = space.sample(100 + seed)
        model_bytes = convert_int8(space.build(hp), rep)  # free batch -> rebuilt at batch 1
        graph = read_graph(model_bytes)
        assert set(graph.op_names()) <= TFLM_OPS, space.describe(hp)
        assert graph.inputs[0].shape[0] == 1, space.describe(hp)
        try:  # untrained: logits may collapse below what TFLM's softmax accepts
            assert len(int8_predict(model_bytes, digits.x_val[:5])) == 5
        except CandidateError as exc:
            assert "SOFTMAX input scale" in str(exc), str(exc)
            crashed += 1
        if hp.values.get("tf_norm") == "layer":  # LayerNorm costs float ops on the device
            assert not graph.is_integer_only, space.describe(hp)
    assert crashed <= 2


def test_runtime_abort_becomes_a_candidate_error(digits) -> None:  # noqa: ANN001
    inp = keras.Input((8, 8, 1), batch_size=1)
    x = keras.layers.Flatten()(inp)
    tiny = keras.initializers.RandomNormal(stddev=1e-9)
    x = keras.layers.Dense(10, kernel_initializer=tiny, activation="softmax")(x)
    model_bytes = convert_int8(keras.Model(inp, x), digits.representative(16))
    with pytest.raises(CandidateError, match=r"crashed \(SIGABRT\).*SOFTMAX input scale"):
        int8_accuracy(model_bytes, digits.x_val[:3], digits.y_val[:3])


def test_int8_predictions_match_the_tflite_interpreter(converted, digits) -> None:  # noqa: ANN001
    import tensorflow as tf

    model_bytes = converted["dsconv"][1]
    interp = tf.lite.Interpreter(model_content=model_bytes)
    interp.allocate_tensors()
    inp, out = interp.get_input_details()[0], interp.get_output_details()[0]
    scale, zero = inp["quantization"]
    x = digits.x_val[:100]
    q = quantize_inputs(x, scale, zero, np.int8)
    expected = []
    for i in range(len(x)):
        interp.set_tensor(inp["index"], q[i : i + 1])
        interp.invoke()
        expected.append(int(np.argmax(interp.get_tensor(out["index"]))))
    agree = np.mean(int8_predict(model_bytes, x) == np.array(expected))
    assert agree >= 0.98


def test_quantize_inputs_rounds_and_clips() -> None:
    q = quantize_inputs(np.array([0.0, 0.6, 1.0, 9.0, -9.0]), 1 / 255, -128, np.int8)
    assert q.tolist() == [-128, 25, 127, 127, -128]


def test_model_sources(converted, tmp_path: Path) -> None:  # noqa: ANN001
    model_bytes = converted["hybrid"][1]
    ops = read_graph(model_bytes).op_names()
    paths = write_model_sources(model_bytes, tmp_path / "best")
    assert [p.name for p in paths] == ["model_data.h", "model_data.cc", "model_ops.h"]
    header, source, ops_h = (p.read_text() for p in paths)
    crc = f"{zlib.crc32(model_bytes):08x}"
    assert model_crc32(model_bytes) == crc
    assert f'#define MCUNAS_MODEL_CRC32 "{crc}"' in header
    assert f"#define MCUNAS_MODEL_LEN {len(model_bytes)}" in header
    assert "alignas(16) const unsigned char g_model_data[]" in source
    body = source.split("{", 1)[1].split("}", 1)[0]
    data = bytes(int(h, 16) for h in re.findall(r"0x([0-9a-f]{2})", body))
    assert data == model_bytes
    assert f"#define MCUNAS_MODEL_OP_COUNT {len(ops)}" in ops_h
    calls = re.findall(r"resolver\.(Add\w+)\(\)", ops_h)
    assert calls == [RESOLVER_METHODS[o] for o in ops]
    assert {"AddBatchMatMul", "AddConv2D", "AddDepthwiseConv2D", "AddMean"} <= set(calls)


def test_resolver_names() -> None:
    assert set(TFLM_OPS) - set(RESOLVER_METHODS) <= {"REDUCE_ALL"}  # no Add* in the header
    assert resolver_methods(["CONV_2D", "RELU6", "CONV_2D", "PADV2"]) == [
        "AddConv2D",
        "AddRelu6",
        "AddPadV2",
    ]
    with pytest.raises(CandidateError, match="GELU has no TFLite Micro kernel"):
        resolver_methods(["FULLY_CONNECTED", "GELU"])
    with pytest.raises(CandidateError, match="CUSTOM:Foo"):
        write_model_sources(b"", Path("unused"), op_names=["CUSTOM:Foo"])


def test_gelu_model_is_a_candidate_error_not_a_crash(digits) -> None:  # noqa: ANN001
    inp = keras.Input((8, 8, 1), batch_size=1)
    x = keras.layers.Flatten()(inp)
    x = keras.layers.Dense(16, activation="gelu")(x)
    model = keras.Model(inp, keras.layers.Dense(10, activation="softmax")(x))
    model_bytes = convert_int8(model, digits.representative(16))
    assert "GELU" in read_graph(model_bytes).op_names()
    with pytest.raises(CandidateError, match="cannot load the model: no kernel for GELU"):
        int8_accuracy(model_bytes, digits.x_val[:3], digits.y_val[:3])
    with pytest.raises(CandidateError, match="GELU has no TFLite Micro kernel"):
        write_model_sources(model_bytes, Path("unused"))


def test_conversion_failures_are_one_line_candidate_errors() -> None:
    inp = keras.Input((8,), batch_size=1)
    model = keras.Model(inp, keras.layers.Dense(4)(keras.layers.Lambda(keras.ops.erf)(inp)))
    with pytest.raises(CandidateError) as info:
        convert_int8(model, np.random.default_rng(0).random((8, 8), dtype=np.float32))
    message = str(info.value)
    assert message.startswith("INT8 conversion failed: ") and "Erf" in message
    assert "\n" not in message
    with pytest.raises(CandidateError, match="does not fit the model input"):
        convert_int8(model, np.zeros((3, 8, 8), np.float32))


# The firmware sources of a real model, generated before they moved into template files,
# pinned by digest: the templates must give the same bytes.
PINNED_SOURCES = {
    "ad01_int8": ("22a7fea28ae7bf4e", "a6e043e082b51c2f", "890e561160b61f95"),
    "kws_ref_model": ("33254bd359fdc9ef", "caa7ea535bc13af3", "28a45c7c812b4fc0"),
}


@pytest.mark.parametrize("name", sorted(PINNED_SOURCES))
def test_model_sources_are_byte_identical_to_the_pinned_ones(name: str, tmp_path: Path) -> None:
    import hashlib

    import mcunas

    model = Path(mcunas.__file__).parent / "calibration" / "models" / f"{name}.tflite"
    paths = write_model_sources(model.read_bytes(), tmp_path)
    digests = tuple(hashlib.sha256(p.read_bytes()).hexdigest()[:16] for p in paths)
    assert digests == PINNED_SOURCES[name]


def test_tensorflow_chatter_is_dropped_and_the_rest_passed_on(capfd) -> None:
    import os

    from mcunas.tflite.convert import tensorflow_chatter_dropped

    with tensorflow_chatter_dropped():
        os.write(2, b"E0000 node_def_util.cc:682] NodeDef mentions use_unbounded_threadpool\n")
        os.write(2, b"a real problem\n")
    assert capfd.readouterr().err == "a real problem\n"
