"""The simulator's models: memory, latency, and their calibration from measurements.

:mod:`mcunas.cost.memory` and :mod:`mcunas.cost.latency` are imported on
use; this package imports nothing heavy.
"""
