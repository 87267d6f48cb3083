"""What a key may do: its own scopes, narrowed by its creator's current role."""

from enum import StrEnum

from formsapi.models import Role


class Scope(StrEnum):
    forms_read = "forms:read"
    submissions_read = "submissions:read"
    forms_write = "forms:write"
    submissions_write = "submissions:write"
    events_read = "events:read"
    webhooks_manage = "webhooks:manage"


READ_SCOPES = frozenset({Scope.forms_read, Scope.submissions_read, Scope.events_read})

# What each role may do; a key may do its own scopes within its creator's role.
ROLE_SCOPES: dict[str, frozenset[str]] = {
    Role.owner: frozenset(Scope),
    Role.admin: frozenset(Scope),
    # Webhook endpoints send the organization's data elsewhere: owners and admins decide.
    Role.editor: frozenset(Scope) - {Scope.webhooks_manage},
    Role.viewer: READ_SCOPES,
}


def effective_scopes(key_scopes: list[str], role: str) -> frozenset[str]:
    return frozenset(key_scopes) & ROLE_SCOPES.get(role, frozenset())
