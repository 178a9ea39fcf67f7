"""The supernet's shape and its subnets, as plain data (no TensorFlow).

A :class:`SupernetSpec` is planned from the input shape: a 3x3 stem and four
stages of inverted-residual (``mb``) blocks, as Once-for-All and MCUNet's
TinyNAS. Each subnet (:class:`Subnet`) chooses, per stage, its depth (the
first 1-3 blocks), its depthwise kernel (3, 5 or 7, centre-cropped) and its
expansion ratio (the first 2x, 3x, 4x or 6x hidden channels), and one input
resolution for the whole network. Every subnet is a point of the stage family
(:func:`subnet_values`), so it is built, converted, profiled, exported and
reported as any trial is.

Where the maps are small the plan drops what could not be shared exactly: a
stride that would leave a side under 3, a kernel longer than a side (the
subnet's builder would clip it), a resolution that leaves the maps as they are
or brings the long side under 24.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from mcunas.errors import UserError

__all__ = [
    "choose_width",
    "DEPTHS",
    "EXPANSIONS",
    "KERNELS",
    "WIDTHS",
    "Subnet",
    "SupernetSpec",
    "crossover",
    "largest",
    "mutate",
    "plan_supernet",
    "random_subnet",
    "smallest",
    "subnet_from_values",
    "subnet_values",
]

KERNELS = (3, 5, 7)
EXPANSIONS = (2, 3, 4, 6)
DEPTHS = (1, 2, 3)
STAGE_WIDTHS = (16, 24, 40, 64)
STEM_WIDTH = 16
# Width multipliers of the whole supernet, largest first: the session trains the
# largest whose subnets fit the budgets often enough (MCUNet's search-space choice).
WIDTHS = (1.0, 0.75, 0.5, 0.25)
RESOLUTIONS = (1, 2, 4)
PROBES = 16  # subnets drawn per supernet width when choosing it
MIN_FIT_SHARE = 0.25  # of them inside the budgets for a width to be chosen
STEM_STRIDE_FROM = 32  # as the other families: inputs this long get a stride-2 stem
MIN_SIDE = 3  # no shared kernel or stride leaves a side (other than 1) shorter than this
SHRINK_FROM = 16  # the stage family's resolution knob leaves shorter sides alone
# A coarser resolution is offered only while the input's long side stays this long:
# below it, its small maps would cost every resolution its strides and large kernels.
MIN_LONG_SIDE = 24


@dataclass(frozen=True)
class StagePlan:
    """One stage of the supernet: output width, stride of its first block, kernel choices."""

    width: int
    stride: int
    kernels: tuple[int, ...]


@dataclass(frozen=True)
class SupernetSpec:
    """The supernet planned for one input shape and class count."""

    input_shape: tuple[int, int, int]
    num_classes: int
    stem_width: int
    stem_kernel: tuple[int, int]
    stem_stride: int
    stages: tuple[StagePlan, ...]
    resolutions: tuple[int, ...]
    width: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (kept with the checkpoint: a resumed run must match it)."""
        data = asdict(self)
        data["stages"] = [asdict(s) for s in self.stages]
        return data

    @property
    def max_depth(self) -> int:
        """Blocks per stage in the supernet (the deepest subnet's)."""
        return max(DEPTHS)

    def space_size(self) -> int:
        """How many distinct subnets the supernet holds."""
        per_stage = [len(DEPTHS) * len(s.kernels) * len(EXPANSIONS) for s in self.stages]
        return len(self.resolutions) * math.prod(per_stage)


@dataclass(frozen=True)
class Subnet:
    """One subnet: input resolution, and per stage its depth, kernel and expansion."""

    resolution: int
    depths: tuple[int, ...]
    kernels: tuple[int, ...]
    expansions: tuple[int, ...]

    def key(self) -> str:
        """A short unique name, e.g. ``r2 d123 k357 e2346``."""
        return (
            f"r{self.resolution} d{''.join(map(str, self.depths))} "
            f"k{''.join(map(str, self.kernels))} e{''.join(map(str, self.expansions))}"
        )


def _pooled(side: int, factor: int) -> int:
    return -(-side // factor) if side >= SHRINK_FROM else side


def _strided(side: int, stride: int) -> int:
    return -(-side // stride)


def _scaled(width: int, mult: float) -> int:
    return max(8, int(round(width * mult / 8)) * 8)


def plan_supernet(
    input_shape: tuple[int, ...], num_classes: int, width: float = 1.0
) -> SupernetSpec:
    """The supernet for inputs of ``input_shape`` (H, W, C), its widths times ``width``.

    Raises:
        UserError: a side is 2 (neither a series' 1 nor long enough for a 3-tap kernel).
    """
    h, w = int(input_shape[0]), int(input_shape[1])
    if any(side == 2 for side in (h, w)) or min(h, w) < 1:
        raise UserError(
            f"The supernet needs input sides of 1 or at least {MIN_SIDE}, got {h}x{w}; "
            "use --strategy evolution for this input."
        )
    resolutions, seen = [], set()
    for f in RESOLUTIONS:
        size = (_pooled(h, f), _pooled(w, f))
        if f == 1 or (size not in seen and max(size) >= MIN_LONG_SIDE):
            seen.add(size)
            resolutions.append(f)
    sizes = [(_pooled(h, f), _pooled(w, f)) for f in resolutions]
    stem_stride = 2 if max(h, w) >= STEM_STRIDE_FROM and _can_stride(sizes) else 1
    sizes = [(_strided(a, stem_stride), _strided(b, stem_stride)) for a, b in sizes]
    stages = []
    for i, channels in enumerate(STAGE_WIDTHS):
        stride = 2 if i > 0 and _can_stride(sizes) else 1
        sizes = [(_strided(a, stride), _strided(b, stride)) for a, b in sizes]
        shortest = min(s for size in sizes for s in size if s > 1) if _any_long(sizes) else 1
        kernels = tuple(k for k in KERNELS if k <= shortest) or (KERNELS[0],)
        stages.append(StagePlan(_scaled(channels, width), stride, kernels))
    stem_kernel = (3 if h > 1 else 1, 3 if w > 1 else 1)
    return SupernetSpec(
        (h, w, int(input_shape[2])),
        int(num_classes),
        _scaled(STEM_WIDTH, width),
        stem_kernel,
        stem_stride,
        tuple(stages),
        tuple(resolutions),
        width,
    )


def choose_width(
    input_shape: tuple[int, ...],
    num_classes: int,
    fit_flags: Callable[[SupernetSpec, list[Subnet]], list[bool]],
    seed: int,
) -> tuple[float, str]:
    """The largest of :data:`WIDTHS` whose subnets fit the budgets often enough, and the tally.

    Each width in turn draws its smallest subnet and :data:`PROBES` - 1 random ones;
    ``fit_flags`` says which fit. The first width where :data:`MIN_FIT_SHARE` of them
    do is chosen; if none, the one most fit (the larger on ties).
    """
    rng, tried, counts = random.Random(seed), [], {}
    for width in WIDTHS:
        spec = plan_supernet(input_shape, num_classes, width)
        nets = [smallest(spec)] + [random_subnet(spec, rng) for _ in range(PROBES - 1)]
        counts[width] = sum(fit_flags(spec, nets))
        tried.append(f"x{width:g} {counts[width]}/{PROBES}")
        if counts[width] >= MIN_FIT_SHARE * PROBES:
            return width, ", ".join(tried)
    return max(counts, key=lambda w: (counts[w], w)), ", ".join(tried)


def _any_long(sizes: list[tuple[int, int]]) -> bool:
    return any(s > 1 for size in sizes for s in size)


def _can_stride(sizes: list[tuple[int, int]]) -> bool:
    """A stride of 2 keeps every side (other than 1) at least MIN_SIDE, at every resolution."""
    return all(s == 1 or _strided(s, 2) >= MIN_SIDE for size in sizes for s in size) and all(
        max(size) >= 2 * MIN_SIDE - 1 for size in sizes
    )


def largest(spec: SupernetSpec) -> Subnet:
    """The biggest subnet: finest resolution, every block, largest kernels and expansion."""
    return _extreme(spec, max)


def smallest(spec: SupernetSpec) -> Subnet:
    """The smallest subnet: coarsest resolution, one block per stage, smallest choices."""
    return _extreme(spec, min)


def _extreme(spec: SupernetSpec, pick: Any) -> Subnet:
    n = len(spec.stages)
    return Subnet(
        (min if pick is max else max)(spec.resolutions),  # a finer input is a larger subnet
        (pick(DEPTHS),) * n,
        tuple(pick(s.kernels) for s in spec.stages),
        (pick(EXPANSIONS),) * n,
    )


def random_subnet(spec: SupernetSpec, rng: random.Random) -> Subnet:
    """A subnet drawn uniformly, choice by choice."""
    return Subnet(
        rng.choice(spec.resolutions),
        tuple(rng.choice(DEPTHS) for _ in spec.stages),
        tuple(rng.choice(s.kernels) for s in spec.stages),
        tuple(rng.choice(EXPANSIONS) for _ in spec.stages),
    )


def mutate(spec: SupernetSpec, net: Subnet, rng: random.Random, prob: float = 0.1) -> Subnet:
    """Each choice redrawn with probability ``prob`` (Once-for-All's mutation)."""
    other = random_subnet(spec, rng)

    def pick(mine: tuple[int, ...], new: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(n if rng.random() < prob else m for m, n in zip(mine, new, strict=True))

    resolution = other.resolution if rng.random() < prob else net.resolution
    return Subnet(
        resolution,
        pick(net.depths, other.depths),
        pick(net.kernels, other.kernels),
        pick(net.expansions, other.expansions),
    )


def crossover(a: Subnet, b: Subnet, rng: random.Random) -> Subnet:
    """Each choice taken from one parent or the other at random."""

    def pick(x: tuple[int, ...], y: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(rng.choice((p, q)) for p, q in zip(x, y, strict=True))

    return Subnet(
        rng.choice((a.resolution, b.resolution)),
        pick(a.depths, b.depths),
        pick(a.kernels, b.kernels),
        pick(a.expansions, b.expansions),
    )


def subnet_values(spec: SupernetSpec, net: Subnet) -> dict[str, Any]:
    """The stage family's hyperparameters of ``net`` (``McuSearchSpace.hyperparameters``)."""
    values: dict[str, Any] = {
        "family": "stages",
        "activation": "relu",
        "learning_rate": 0.001,  # a fine-tuning rate: the weights are trained already
        "st_resolution": net.resolution,
        "st_width_mult": 1.0,
        "st_stem_width": spec.stem_width,
        "st_stem_kh": 3,
        "st_stem_kw": 1 if spec.input_shape[1] == 1 else 3,
        "st_stem_stride": spec.stem_stride,
        "st_stages": len(spec.stages),
    }
    for i, stage in enumerate(spec.stages):
        values |= {
            f"st_block_{i}": "mb",
            f"st_repeats_{i}": net.depths[i],
            f"st_kernel_{i}": net.kernels[i],
            f"st_width_{i}": stage.width,
            f"st_stride_{i}": stage.stride,
            f"st_expansion_{i}": net.expansions[i],
        }
    return values


def subnet_from_values(spec: SupernetSpec, values: dict[str, Any]) -> Subnet:
    """Inverse of :func:`subnet_values` (a stored trial's hyperparameters)."""
    n = len(spec.stages)
    return Subnet(
        int(values["st_resolution"]),
        tuple(int(values[f"st_repeats_{i}"]) for i in range(n)),
        tuple(int(values[f"st_kernel_{i}"]) for i in range(n)),
        tuple(int(values[f"st_expansion_{i}"]) for i in range(n)),
    )
