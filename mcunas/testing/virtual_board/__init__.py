"""A virtual board: a test device that speaks ``MCUNAS/1`` on a pseudo-terminal.

Modules, each importing only those before it: ``figures`` (what the virtual
firmware reports for a model), ``truth`` (a device with hidden costs, for
checking calibration), ``device`` (the board on a pty, its faults), ``project``
(a stand-in for the PlatformIO project that "flashes" a device). Run one with
``python -m mcunas.testing.virtual_board`` (see ``__main__``).
"""
