"""The search space: Keras Tuner ``HyperModel`` of MCU-friendly blocks.

Importing this package imports Keras (and TensorFlow): do it lazily.
"""

from mcunas.space.hypermodel import FAMILIES, McuSearchSpace

__all__ = ["FAMILIES", "McuSearchSpace"]
