"""kerasflow: a Keras-style deep-learning framework on a TF1-style graph backend."""

from kerasflow import backend

__version__ = "0.1.0"
__all__ = ["backend", "__version__"]
