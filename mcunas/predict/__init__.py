"""The simulator's models: memory, latency, and their calibration from measurements.

:mod:`mcunas.predict.memory` and :mod:`mcunas.predict.latency` are imported on
use; this package imports nothing heavy.
"""
