"""Measuring a model on a board or the simulator, behind one interface.

Every backend implements :class:`Measurer` and is registered by name in
:data:`MEASURERS` (or installed as a ``mcunas.measurers`` entry point);
:func:`mcunas.measure.opener.open_measurer` opens any of them. The tuner, the
CLI and the reports see only :class:`mcunas.figures.Figures` value objects.
"""

from mcunas.measure.base import (
    MEASURERS,
    MeasureOptions,
    Measurer,
    get_measurer,
    measurer_names,
    register_measurer,
)

__all__ = [
    "MEASURERS",
    "MeasureOptions",
    "Measurer",
    "get_measurer",
    "measurer_names",
    "register_measurer",
]
