__version__ = "1.0.0"
# The API this client speaks: its major version follows it (/v1 <-> 1.x).
API_VERSION = "v1"
