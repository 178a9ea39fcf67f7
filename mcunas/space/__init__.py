"""The search space: Keras Tuner ``HyperModel`` of MCU-friendly blocks.

``FAMILIES`` and ``McuSearchSpace`` import Keras (and TensorFlow) on first use,
so ``mcunas.space.reference`` and ``mcunas.space.size`` stay light to import.
"""

from typing import Any

__all__ = ["FAMILIES", "McuSearchSpace"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from mcunas.space import hypermodel

        return getattr(hypermodel, name)
    raise AttributeError(f"module 'mcunas.space' has no attribute {name!r}")
