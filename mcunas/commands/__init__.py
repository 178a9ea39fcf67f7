"""Click commands, one module each, loaded lazily by :mod:`mcunas.cli`."""
