"""Views and starts, counted in the process and written every few seconds
(kit.held_counts): a view is a GET of a public page, and a write for each
would put one on every page load.

A start comes with the stamp of the page it began on (hosted/stamp.py), and
counts once per stamp: the flush records the stamps it counts
(models.StartedStamp) in the transaction that adds their starts, and counts
only those no process recorded before, so a beacon posted again, or a first
post after it, adds nothing. A stamp is kept for `START_WINDOW`: a start
begun later than that after its page was served is not counted, so what is
kept is a day of starts, not a year of them (a stamp lives 400 days)."""

from collections import Counter
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.funnel import repository
from formsapi.funnel.steps import HOUR, START, hour_of
from formsapi.kit.held_counts import HeldCounts
from formsapi.kit.time import utcnow

START_WINDOW = timedelta(days=1)

# A count, and the stamp it is the start of (None: a count like any other).
Held = tuple[repository.Key, str | None]


def _kept_until(key: repository.Key) -> datetime:
    # The hour's end, a window on: past any moment its stamp can be posted.
    return key[2] + START_WINDOW + HOUR


class Buffer(HeldCounts[Held]):
    what = "funnel counts"

    def add(
        self, organization_id: str, form_id: str, version: int, at: datetime, step: str
    ) -> None:
        """Count one step of a form's funnel, in the hour of `at`: written with the next flush."""
        self.count(((organization_id, form_id, hour_of(at), version, step), None))

    def start(
        self, organization_id: str, form_id: str, version: int, at: datetime, claim: str | None
    ) -> None:
        """Count a respondent's start in the hour of `at`: once for the stamp
        `claim` names (stamp.claim; `at` its moment) whoever posts it, how
        often and to which process, and not when it is older than
        START_WINDOW; without a stamp, each time."""
        key = (organization_id, form_id, hour_of(at), version, START)
        if claim is None:
            self.count((key, None))
        elif at > utcnow() - START_WINDOW:
            self.count((key, claim))

    async def write(self, session: AsyncSession, held: Counter[Held]) -> None:
        counts: Counter[repository.Key] = Counter()
        claims: dict[str, repository.Key] = {}
        for (key, claim), count in held.items():
            if claim is None:
                counts[key] += count
            else:
                claims[claim] = key
        kept = {claim: _kept_until(key) for claim, key in claims.items()}
        for claim in await repository.claim_starts(session, kept):
            counts[claims[claim]] += 1
        await repository.add(session, counts.items(), held=True)
