"""Measuring a model on a board or the simulator, behind one interface.

Every backend implements :class:`Measurer` and is registered by name in
:data:`MEASURERS`; the tuner, the CLI and the reports see only
:class:`mcunas.figures.Figures` value objects.
"""

from mcunas.measure.base import MEASURERS, Measurer, get_measurer, register_measurer

__all__ = ["MEASURERS", "Measurer", "get_measurer", "register_measurer"]
