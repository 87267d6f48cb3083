"""formsapi: forms and submissions with a versioned REST API."""

__version__ = "0.1.0"
