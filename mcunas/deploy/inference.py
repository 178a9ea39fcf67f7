"""Running a search's ``best/`` on inputs, as the board would: what ``mcunas predict`` does.

Here, in :mod:`mcunas.deploy`, because ``best/`` is what a search deploys and this
module only reads it: it sits on the floor of the data readers, the front end and
the TFLite Micro runtime it calls, so the command and any other user can import it
and neither the front end nor the dataset readers need to import each other.

Raw inputs go through ``frontend.tflite`` then ``model.tflite`` in the host TFLM
runtime. A WAV clip is made int16 PCM, cut or zero-padded to the samples the
model's input needs, run frame by frame through the exported front-end graph
(after a reset), its int16 features divided by ``2**output_bits`` and quantised
with the model's own input scale, then the model is invoked. A ``best/`` without
a front end gets today's features: the numpy log-mel (:func:`mcunas.data.audio.log_mel`)
for WAV files, and ``.npz`` features or images as they are.

Example::

    best = BestModel.load(Path("out/best"))
    x, sources, labels = labelled_inputs(best, Path("clips/yes"))
    rows = best.run(x, sources, labels)
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mcunas.errors import DatasetError, ModelError
from mcunas.inputs.opener import shown

__all__ = ["BestModel", "Prediction", "labelled_inputs"]

WAV = ".wav"
# How best.json's preprocessing names the clips' rate for the numpy log-mel (data/audio.py).
_TRAINED_RATE = re.compile(r"\bwav: mono, (\d{3,6}) Hz")


@dataclass(frozen=True)
class Prediction:
    """One input's class and score; ``label`` is its folder's class when known."""

    source: str
    index: int
    name: str
    score: float
    label: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {
            "input": self.source,
            "class": self.name,
            "index": self.index,
            "score": round(self.score, 6),
            "label": self.label,
        }


class BestModel:
    """A ``best/`` folder: ``model.tflite``, ``frontend.tflite`` when present, ``best.json``."""

    def __init__(self, folder: Path, model: bytes, frontend: bytes | None, info: dict[str, Any]):
        from mcunas.frontend.host import FrontendRunner
        from mcunas.tflite.reader import read_graph

        self.folder, self.model, self.info = folder, model, info
        self.runner = FrontendRunner(frontend) if frontend is not None else None
        graph = read_graph(model)
        self.input_shape = tuple(int(d) for d in graph.inputs[0].shape[1:])
        self.class_names = [str(c) for c in info.get("class_names") or []]
        self.classes = int(np.prod(graph.outputs[0].shape[1:]))

    @classmethod
    def load(cls, folder: Path) -> BestModel:
        """Read a ``best/`` folder, checked as ``mcunas export`` checks it.

        The model must be the one ``best.json`` names (its SHA-256), INT8, one output
        per class name; the front end is the one ``best.json`` names
        (:func:`mcunas.deploy.best_files.read_best`).

        Raises:
            ModelError: no ``model.tflite`` or ``best.json`` in it, or either not
                what a search exported.
        """
        from mcunas.deploy.best_files import check_classes, read_best

        best = read_best(folder)
        check_classes(best.model, folder / "model.tflite", len(best.info.get("class_names") or []))
        if best.frontend is None and (folder / "frontend.tflite").exists():
            sys.stderr.write(
                f"Note: {shown(folder / 'best.json')} names no front end: frontend.tflite "
                "is not used.\n"
            )
        return cls(folder, best.model, best.frontend, best.info)

    @property
    def trained_rate(self) -> int | None:
        """The sample rate the model's clips had: the front end's, else from best.json."""
        if self.runner is not None:
            return int(self.runner.cfg.sample_rate)
        found = _TRAINED_RATE.search(str(self.info.get("preprocessing") or ""))
        return int(found[1]) if found else None

    def name_of(self, index: int) -> str:
        """The class name of an output index (the index itself without names)."""
        return self.class_names[index] if index < len(self.class_names) else str(index)

    def wav_features(self, path: Path) -> np.ndarray:
        """The model's float input for one WAV file, made as on the board."""
        from mcunas.data.audio import read_wav

        samples, rate = read_wav(path)
        frames = self.input_shape[0]
        trained = self.trained_rate
        if trained is not None and rate != trained:
            taker = "the front end takes" if self.runner is not None else "the model was trained on"
            raise DatasetError(
                f"{shown(path)} has {rate} Hz, {taker} {trained} Hz: refused, not resampled "
                f"(resample it first, e.g. sox IN.wav -r {trained} OUT.wav)"
            )
        if self.runner is not None:
            cfg = self.runner.cfg
            from mcunas.frontend.host import scaled, to_int16

            need = cfg.frame_samples + (frames - 1) * cfg.hop_samples
            x16 = to_int16(np.pad(samples[:need], (0, max(0, need - len(samples)))))
            feats = scaled(self.runner.clip(x16), cfg)
        else:
            from mcunas.data.audio import FRAME_MS, HOP_MS, log_mel

            frame, hop = round(rate * FRAME_MS / 1000), round(rate * HOP_MS / 1000)
            need = frame + (frames - 1) * hop
            feats = log_mel(np.pad(samples[:need], (0, max(0, need - len(samples)))), rate)
        if feats.size != int(np.prod(self.input_shape)):
            raise DatasetError(
                f"{path}: features of shape {feats.shape} do not fit the model input "
                f"{self.input_shape}"
            )
        return feats.reshape(self.input_shape)

    def run(self, x: np.ndarray, sources: list[str], labels: list[int | None]) -> list[Prediction]:
        """Invoke the model on float inputs (quantised with its own input scale)."""
        from mcunas.errors import CandidateError
        from mcunas.tflite.evaluate import int8_outputs

        if not len(x):
            return []
        try:
            probs = int8_outputs(self.model, np.asarray(x, np.float32))
        except CandidateError as exc:
            raise ModelError(str(exc)) from None
        best = np.argmax(probs, axis=-1)
        return [
            Prediction(src, int(i), self.name_of(int(i)), float(p[i]), lab)
            for src, i, p, lab in zip(sources, best, probs, labels, strict=True)
        ]


def _label(best: BestModel, folder_name: str, folders: list[str]) -> int:
    if best.class_names:
        if folder_name not in best.class_names:
            raise DatasetError(
                f"class folder {folder_name!r} is not one of the model's classes "
                f"({', '.join(best.class_names)})"
            )
        return best.class_names.index(folder_name)
    return folders.index(folder_name)


def labelled_inputs(best: BestModel, path: Path) -> tuple[np.ndarray, list[str], list[int | None]]:
    """Float model inputs, their names and labels for one path (WAV, folder or ``.npz``).

    Raises:
        DatasetError: a missing path, an unknown kind of file, a class folder the
            model does not know, features that do not fit the model.
    """
    if path.is_dir():
        return _folder(best, path)
    if not path.exists():
        raise DatasetError(f"{shown(path)} does not exist")
    if path.suffix.lower() == WAV:
        return best.wav_features(path)[None], [str(path)], [None]
    if path.suffix.lower() == ".npz":
        return _npz(best, path)
    raise DatasetError(f"{path}: give WAV files, a folder of class subfolders or an .npz")


def _folder(best: BestModel, path: Path) -> tuple[np.ndarray, list[str], list[int | None]]:
    from mcunas.data.folder import NOISE_FOLDER, read_folder

    subs = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
    subs = [p for p in subs if p.name != NOISE_FOLDER]
    if not subs:  # a plain folder of WAV files
        wavs = sorted(p for p in path.iterdir() if p.suffix.lower() == WAV)
        if not wavs:
            raise DatasetError(f"{path} holds no WAV files and no class subfolders")
        return (
            np.stack([best.wav_features(p) for p in wavs]),
            [str(p) for p in wavs],
            [None] * len(wavs),
        )
    names = [p.name for p in subs]
    files = [(f, _label(best, s.name, names)) for s in subs for f in sorted(s.iterdir())]
    wavs = [(f, lab) for f, lab in files if f.suffix.lower() == WAV]
    if wavs:
        x = np.stack([best.wav_features(f) for f, _ in wavs])
        return x, [str(f) for f, _ in wavs], [lab for _, lab in wavs]
    got = read_folder(path)  # images, preprocessed as for training
    x = got.x
    if x.shape[1:] != best.input_shape:
        raise DatasetError(
            f"{path}: images of shape {x.shape[1:]} do not fit the model input {best.input_shape}"
        )
    labels = [_label(best, got.class_names[int(y)], names) for y in got.y]
    return x, [f"{path}/{got.class_names[int(y)]}#{i}" for i, y in enumerate(got.y)], list(labels)


def _npz(best: BestModel, path: Path) -> tuple[np.ndarray, list[str], list[int | None]]:
    """An ``.npz``'s inputs and labels, checked as a dataset's are."""
    from mcunas.inputs.formats import load_npz
    from mcunas.inputs.shapes import check_labels, check_samples

    arrays = load_npz(path, "dataset", DatasetError)
    pairs = (("x_test", "y_test"), ("x", "y"), ("x_val", "y_val"), ("x_train", "y_train"))
    found = [(xk, yk) for xk, yk in pairs if xk in arrays]
    if not found:
        raise DatasetError(f"{path.name} has no x_test, x, x_val or x_train array")
    xk, yk = found[0]
    x = check_samples(arrays[xk], f"{path.name}[{xk}]", DatasetError)
    if int(np.prod(x.shape[1:])) != int(np.prod(best.input_shape)):
        raise DatasetError(
            f"{path.name}: {xk} of shape {x.shape[1:]} does not fit the model input "
            f"{best.input_shape}"
        )
    x = x.reshape((len(x), *best.input_shape))
    labels: list[int | None] = [None] * len(x)
    if yk in arrays:
        classes = best.classes
        y = check_labels(arrays[yk], f"{path.name}[{yk}]", DatasetError, len(x), classes)
        labels = [int(v) for v in y]
    return x, [f"{path}[{xk}][{i}]" for i in range(len(x))], labels
