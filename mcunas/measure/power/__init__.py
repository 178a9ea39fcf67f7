"""Measured energy: power meters, their recordings and the energy of a run.

- :mod:`~mcunas.measure.power.meter`: a meter spec, opening it, the energy of a run;
- :mod:`~mcunas.measure.power.drivers`: the real meters (Joulescope, Nordic PPK2);
- :mod:`~mcunas.measure.power.trace`: a recording and ``MeterError``, shared by all.
- ``virtual``: the virtual board's meter, a test device (``mcunas.testing.virtual_board``),
  opened by name.

The energy *estimate* (a board's power times the latency) is
:mod:`mcunas.cost.energy`.
"""
