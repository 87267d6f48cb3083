from sqlalchemy import BigInteger
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.models.base import Base


class EventOutbox(Base):
    """Events not yet fanned out to webhook endpoints: a row written with
    each event, deleted by the worker that fans it out. Any committed row is
    there to take, whatever other transactions are still running, so
    webhooks wait for no one (the events list, which promises an order,
    does: event/repository.py)."""

    __tablename__ = "event_outbox"

    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
