"""harness: regression tracking for GPU kernels across Triton compiler stacks."""

__version__ = "0.1.0"
