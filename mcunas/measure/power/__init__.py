"""Measured energy: power meters, their recordings and the energy of a run.

- :mod:`~mcunas.measure.power.meter`: a meter spec, opening it, the energy of a run;
- :mod:`~mcunas.measure.power.drivers`: the real meters (Joulescope, Nordic PPK2);
- :mod:`~mcunas.measure.power.trace`: a recording and ``MeterError``, shared by all;
- :mod:`~mcunas.measure.power.virtual`: the virtual board's supply current and meter.

The energy *estimate* (a board's power times the latency) is
:mod:`mcunas.predict.energy`.
"""
