"""handwired: wire a transformer's weights by hand, run it, and prove it right."""

__version__ = "0.1.0"
