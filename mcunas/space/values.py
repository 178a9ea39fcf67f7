"""A design's hyperparameter values as plain data: what a space draws and a store keeps."""

from __future__ import annotations

__all__ = ["HpValue", "HpValues"]

HpValue = bool | int | float | str
HpValues = dict[str, HpValue]
