"""Distribution kernels with their modules."""
