"""The installed version of passhost."""

__version__ = "0.1.0"
