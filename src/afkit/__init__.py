"""afkit: the Analysis Facility toolkit."""

__version__ = "0.1.0"
