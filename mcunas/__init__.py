"""mcunas: hardware-aware neural architecture search for microcontrollers."""

__version__ = "0.1.0"
