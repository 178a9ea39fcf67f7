"""mcunas's own signal kernels (``firmware/src/signal/``) seen from Python.

The front end runs on them on Cortex-M boards: :mod:`.graph` checks that a
front-end graph is one they run and packs graphs and frames for their test
harness; :mod:`.build` compiles the harness (host ``g++``, or
``arm-none-eabi-g++`` for a Cortex-M4F run under QEMU) and runs it;
:mod:`.counts` reads the instruction counts measured on the emulated core.
"""
