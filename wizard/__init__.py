"""warpwizard: walks PyTorch engineers from an impossible kernel metric to its cause."""

__version__ = "0.1.0"
