"""Views and starts, counted in the process and written every few seconds
(kit.held_counts): a view is a GET of a public page, and a write for each
would put one on every page load."""

from collections import Counter
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.funnel import repository
from formsapi.funnel.steps import hour_of
from formsapi.kit.held_counts import HeldCounts


class Buffer(HeldCounts[repository.Key]):
    what = "funnel counts"

    def add(
        self, organization_id: str, form_id: str, version: int, at: datetime, step: str
    ) -> None:
        """Count one step of a form's funnel, in the hour of `at`: written with the next flush."""
        self.count((organization_id, form_id, hour_of(at), version, step))

    async def write(self, session: AsyncSession, held: Counter[repository.Key]) -> None:
        await repository.add(session, held.items(), held=True)
