from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: resolved from the bearer key on every request."""

    key_id: str
    organization_id: str
    plan: str
    scopes: frozenset[str]
