"""envdoctor: whether PyTorch will really work on this machine, why not, and the command that fixes it."""

__version__ = "0.1.0"
