"""turnwatch: a monitoring sidecar for production chatbots."""

__version__ = "0.1.0"
