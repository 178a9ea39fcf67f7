"""The ``.tflite`` format and the TFLite Micro host runtime, without TensorFlow.

- :mod:`~mcunas.tflite.reader`: a flatbuffer read into ops, tensors, MACs and bytes;
- :mod:`~mcunas.tflite.writer`: a small flatbuffer written from ops and tensors;
- :mod:`~mcunas.tflite.flatnet`: int8 conv nets written directly (the calibration
  suite, the supernet's cost check);
- :mod:`~mcunas.tflite.kernels`: which ops TFLM registers and which each kernel
  library accelerates;
- :mod:`~mcunas.tflite.resolver_ops`: op names -> ``MicroMutableOpResolver`` methods;
- :mod:`~mcunas.tflite.runtime`: the host TFLM interpreter, its log, the arena report.
"""
