"""Compiled kernels (Cython). Private: import through the Python modules."""
