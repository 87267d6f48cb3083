"""What the tests share besides fixtures (tests/conftest.py): factories,
real servers and receivers on loopback, the contract check, forked
processes, held locks and stalled clients."""
