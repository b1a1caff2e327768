"""dfslab: deploy, measure and break distributed filesystems from one declarative file."""

__version__ = "0.1.0"
