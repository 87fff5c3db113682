"""passhost: a pass infrastructure for tensor-program compilers.

Importing this package is cheap and loads no plugins; subpackages (``passhost.relay``,
``passhost.tir``, ``passhost.text``, ...) are imported on demand.
"""

from passhost._version import __version__

__all__ = ["__version__"]
