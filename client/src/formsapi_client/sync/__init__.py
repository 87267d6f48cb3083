"""The sync tool (`formsapi-sync`, the `sync` extra): forms' submissions
copied into SQLite or PostgreSQL, one typed table per form, kept exact by
following each form's change feed. See formsapi_client.sync.store for the
tables it writes."""

from formsapi_client.sync.runner import NoSuchForm, Outcome, Sync
from formsapi_client.sync.store import Store

__all__ = ["NoSuchForm", "Outcome", "Store", "Sync"]
