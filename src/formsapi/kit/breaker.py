"""A circuit breaker: after a failure, calls fail at once, with no I/O, for a
cool-down that doubles up to a cap; then one call tries again, and success
closes it. So a dependency that is down or frozen costs one caller one
timeout, then nothing until it answers again."""

from formsapi.kit.time import monotonic


class Open(ConnectionError):
    """The breaker is open: the call was not tried."""


class CircuitBreaker:
    def __init__(self, name: str, cool_down: float = 1.0, cool_down_max: float = 30.0) -> None:
        self.name = name
        self._first, self._max = cool_down, cool_down_max
        self._cool_down = cool_down
        self._retry_at = 0.0  # 0: closed; else when one caller may try again
        self._probing = False

    @property
    def closed(self) -> bool:
        return self._retry_at == 0.0

    def admit(self) -> bool:
        """Let a call through, or raise Open. True when it goes as the one
        probe of an open breaker: the caller reports back with succeeded() or
        failed() (or done() if it ended otherwise)."""
        if self._retry_at == 0.0:
            return False
        if self._probing or monotonic() < self._retry_at:
            raise Open(f"{self.name} failed a moment ago")
        self._probing = True
        return True

    def succeeded(self) -> None:
        self._retry_at, self._probing = 0.0, False

    def failed(self, probe: bool) -> None:
        """A call found the dependency gone. From closed: open for the first
        cool-down. The probe failing: open again for twice as long. Another
        call that was in flight when the breaker opened changes nothing."""
        if self._retry_at == 0.0:
            self._cool_down = self._first
        elif probe:
            self._cool_down = min(self._cool_down * 2, self._max)
        else:
            return
        self._retry_at = monotonic() + self._cool_down
        self._probing = False

    def done(self) -> None:
        self._probing = False
