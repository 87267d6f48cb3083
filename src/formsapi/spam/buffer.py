"""Posts refused as spam, counted in the process and written every few
seconds (kit.held_counts): a flood of refused posts costs no write each."""

from collections import Counter

from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.kit.held_counts import HeldCounts
from formsapi.kit.time import utcnow
from formsapi.spam import repository
from formsapi.spam.service import Reason


class Refusals(HeldCounts[repository.Key]):
    what = "spam refusal counts"

    def add(self, organization_id: str, form_id: str, reason: Reason) -> None:
        """Count one refused post of the form, on today's UTC date."""
        self.count((organization_id, form_id, utcnow().date(), reason.value))

    async def write(self, session: AsyncSession, held: Counter[repository.Key]) -> None:
        await repository.add(session, held.items())
