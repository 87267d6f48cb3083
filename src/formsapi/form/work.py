"""Where a form's CPU work runs: checking answers against its rules and
drawing its pages. A form that costs little (language/cost.py) is worked out on
the event loop, as handing it over would cost more; a costly one in its
organization's turn on the fair-share thread (kit/fair.py), so that one
organization's heavy form never holds back another's requests."""

from collections.abc import Callable
from typing import TypeVar

from formsapi.errors import FormsAPIError
from formsapi.kit.fair import FairShare, TooMuchWork
from formsapi.language.cost import INLINE_UNITS

T = TypeVar("T")

# The cost of an organization's work that may wait in one process: about two
# seconds of one core (language/cost.py's unit). Past it, a 503.
WAITING_UNITS = 2_000_000


class OrganizationBusy(FormsAPIError):
    """This organization's forms have as much work waiting in this server
    process as it takes at once (answers checked against costly rules, large
    pages drawn; organizations take turns at it). Nothing was done: retry
    after `Retry-After`."""

    status = 503
    title = "Organization busy"
    slug = "organization-busy"


async def worked_out(fair: FairShare, organization_id: str, cost: int, work: Callable[[], T]) -> T:
    """`work()`: on the loop when `cost` is small, else on the fair-share
    thread in the organization's turn (OrganizationBusy when its work
    waiting is at the bound)."""
    if cost <= INLINE_UNITS:
        return work()
    try:
        return await fair.run(organization_id, cost, work)
    except TooMuchWork:
        raise OrganizationBusy(
            "This organization's forms have too much work waiting; retry in a second.",
            headers={"Retry-After": "1"},
        ) from None
