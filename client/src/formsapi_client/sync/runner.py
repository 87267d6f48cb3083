"""Following each form's change feed into the copy, a page at a time.

The next page is fetched while this one is written (one thread ahead), so
a first copy runs at the pace of the slower side, not of both added up."""

import queue
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from formsapi_client import Client, CursorExpired, NotFound
from formsapi_client.models import FormDetail, FormSummary
from formsapi_client.sync.columns import Question, questions
from formsapi_client.sync.store import Page, Store

PAGE = 1000  # the feed's largest page
AHEAD = 4  # pages fetched ahead of the one being written
# Pages a first copy commits together (with the position after the last): on
# SQLite a commit writes every index page its rows touched, and a page's
# random ids touch most of them (bench/RESULTS.md).
GROUP = 4
_END = object()


@dataclass
class Outcome:
    """What one pass did to one form."""

    form_id: str
    title: str
    table: str = ""
    written: int = 0
    deleted: int = 0
    rows: int = 0
    position: int = 0
    seconds: float = 0.0
    restarted: bool = False
    gone: bool = False
    newly_gone: bool = False  # this pass found it gone
    skipped: bool = False  # unchanged since the last pass: not even asked

    @property
    def changed(self) -> bool:
        return bool(self.written or self.deleted or self.restarted or self.newly_gone)

    def line(self) -> str:
        name = f"{self.title} ({self.form_id})"
        if self.gone:
            return f"{name}: deleted on the server; its last copy stays in {self.table or '-'}."
        head = f"{name} -> {self.table}: "
        if not (self.written or self.deleted):
            return head + f"up to date, {self.rows:,} rows, at change {self.position:,}."
        rate = (self.written + self.deleted) / self.seconds if self.seconds else 0.0
        again = "copied again from the start (its feed position had expired); " * self.restarted
        return head + (
            f"{again}{self.written:,} written, {self.deleted:,} deleted in {self.seconds:.1f} s "
            f"({rate:,.0f}/s); {self.rows:,} rows, at change {self.position:,}."
        )


class NoSuchForm(Exception):
    def __init__(self, form_id: str) -> None:
        super().__init__(f"No form with id '{form_id}' in this API key's organization.")


def plain_console(*, stderr: bool = False) -> Console:
    """A console that prints text as given: what the server sends (a form's
    title) is never read as markup or emoji codes, nor coloured."""
    return Console(stderr=stderr, markup=False, emoji=False, highlight=False, soft_wrap=True)


class RateColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        return Text(f"{task.speed or 0:,.0f} rows/s", style="progress.data.speed")


class Sync:
    def __init__(
        self,
        client: Client,
        store: Store,
        *,
        console: Console | None = None,
        stop: threading.Event | None = None,
        page: int = PAGE,
    ) -> None:
        self.client = client
        self.store = store
        self.console = console or plain_console(stderr=True)
        self.stop = stop or threading.Event()
        self.page = page
        self.seen: dict[str, tuple[str, str, str, int]] = {}  # title, slug, status, change_seq
        self.versions: dict[str, set[int]] = {}  # each form's versions whose questions have columns

    # Which forms.

    def forms(self, chosen: Sequence[str] | None) -> list[FormSummary | str]:
        """The chosen form ids, or every form of the organization; forms this
        copy holds that the organization no longer has are marked deleted."""
        if chosen:
            return list(dict.fromkeys(chosen))
        listed: list[FormSummary | str] = list(self.client.forms.iter())
        present = {form.id for form in listed if isinstance(form, FormSummary)}
        for form_id in self.store.known_forms():
            if form_id not in present:
                listed.append(form_id)  # its pass finds it gone
        return listed

    def once(self, chosen: Sequence[str] | None = None) -> list[Outcome]:
        """One pass over the forms: each copied up to the end of its feed."""
        outcomes = []
        for form in self.forms(chosen):
            if self.stop.is_set():
                break
            outcomes.append(self.form(form))
        return outcomes

    def watch(
        self, chosen: Sequence[str] | None = None, *, longest_wait: float = 30.0
    ) -> Iterator[list[Outcome]]:
        """Pass after pass until stopped: at once while changes come, then
        waiting longer each quiet pass (1 s doubling to `longest_wait`)."""
        wait = 1.0
        while not self.stop.is_set():
            self.store.check_lock()
            outcomes = self.once(chosen)
            yield outcomes
            wait = 1.0 if any(o.changed for o in outcomes) else min(wait * 2, longest_wait)
            self.stop.wait(wait)

    # One form.

    def form(self, form: FormSummary | str) -> Outcome:
        form_id = form if isinstance(form, str) else form.id
        mark = (
            None if isinstance(form, str) else (form.title, form.slug, form.status, form.change_seq)
        )
        if mark is not None and self.seen.get(form_id) == mark:
            title = mark[0]
            return Outcome(form_id, title, self.store.tables[form_id].table.name, skipped=True)
        try:
            detail = self.client.forms.get(form_id)
        except NotFound:
            known = self.store.known_table(form_id)
            if known is None:
                raise NoSuchForm(form_id) from None
            newly = self.store.mark_deleted(form_id)
            return Outcome(form_id, known[1], known[0], gone=True, newly_gone=newly)
        self.store.prepare(detail)
        self.versions.setdefault(form_id, set()).add(detail.version)
        try:
            outcome = self._follow(detail)
        except NotFound:  # deleted while it was being copied
            newly = self.store.mark_deleted(form_id)
            table = self.store.tables[form_id].table.name
            return Outcome(form_id, detail.title, table, gone=True, newly_gone=newly)
        if mark is not None and not self.stop.is_set():
            self.seen[form_id] = mark
        return outcome

    def _follow(self, form: FormDetail) -> Outcome:
        table = self.store.tables[form.id].table.name
        outcome = Outcome(form.id, form.title, table)
        started = time.monotonic()
        position = self.store.position(form.id)
        first = position == 0
        with self._progress(form, first) as progress:
            task = progress.add_task(form.title, total=form.response_count or None)
            while True:
                try:
                    pending: list[Page] = []
                    for page in self._pages(form.id, position):
                        if not page.data and page.next == position:
                            break  # nothing new: nothing written, not even the time
                        self._learn_columns(form.id, page)
                        pending.append(page)
                        stopping = self.stop.is_set()
                        group = GROUP if self.store.tables[form.id].first else 1
                        if len(pending) < group and page.has_more and not stopping:
                            continue
                        applied = self.store.apply(form.id, pending)
                        outcome.written += applied.upserted
                        outcome.deleted += applied.deleted
                        position = applied.position
                        progress.advance(task, sum(len(p.data) for p in pending))
                        pending = []
                        if stopping:
                            break
                    break
                except CursorExpired:
                    if outcome.restarted or position == 0:
                        raise  # from the start it cannot expire: the server is wrong
                    # Its tombstones are no longer kept: a copy from the start is exact.
                    self.store.restart(form.id)
                    outcome.restarted, position = True, 0
        outcome.position = position
        outcome.rows = self.store.count(form.id)
        outcome.seconds = time.monotonic() - started
        return outcome

    def _progress(self, form: FormDetail, first: bool) -> Progress:
        return Progress(
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            RateColumn(),
            TimeRemainingColumn(),
            console=self.console,
            transient=True,
            # Only a first copy of a form with rows shows a bar; later passes
            # print their one line.
            disable=not (first and form.response_count and self.console.is_terminal),
        )

    def _learn_columns(self, form_id: str, page: Page) -> None:
        """Columns for the questions of each form version in the page this
        copy has not read yet: a question that is new, or whose type differs
        from the version the table was made from (its column is widened
        before answers of the other type arrive)."""
        read = self.versions.setdefault(form_id, set())
        versions = {c["formVersion"] for c in page.data if not c.get("deleted")} - read
        for version in sorted(versions):
            self.store.widen(form_id, questions(self.client.forms.get(form_id, version=version)))
            read.add(version)
        left = self.store.unknown_keys(form_id, page)
        if left:  # no version names them (it should not happen): kept as text
            self.store.widen(form_id, [Question(key, "text") for key in sorted(left)])

    def _pages(self, form_id: str, after: int) -> Iterator[Page]:
        """The feed's pages from `after`, fetched on a thread ahead of the caller."""
        ahead: queue.Queue[object] = queue.Queue(maxsize=AHEAD)
        done = threading.Event()

        def put(item: object) -> None:
            while not done.is_set():
                try:
                    ahead.put(item, timeout=0.1)
                    return
                except queue.Full:
                    continue

        def fetch() -> None:
            try:
                position = after
                while not (done.is_set() or self.stop.is_set()):
                    found = self.client.submissions.changes_json(form_id, position, self.page)
                    page = Page.read(found)
                    put(page)
                    position = page.next
                    if not page.has_more:
                        break
            except BaseException as error:  # handed to the caller, raised there
                put(error)
            finally:
                put(_END)

        thread = threading.Thread(target=fetch, name=f"feed-{form_id}", daemon=True)
        thread.start()
        try:
            while True:
                item = ahead.get()
                if item is _END:
                    return
                if isinstance(item, BaseException):
                    raise item
                assert isinstance(item, Page)
                yield item
        finally:
            done.set()
            thread.join(timeout=5)
