"""A form version ready for every reader: its blocks parsed and its logic
laid out once, with the JSON Schema of its answers, what summaries count,
its translations and its cost, each made when first asked for. Kept by
(organization, form, version), as versions never change: the API, the
hosted page, the intake, summaries, exports and the builder all take
theirs from compile_version."""

import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from formsapi.language import translation
from formsapi.language.blocks import VALUED, Block, BlockList, Matrix, dump_blocks, questions
from formsapi.language.cost import Cost, cost_of
from formsapi.language.definition import Definition, Ending, Layout
from formsapi.language.schema import answers_schema

VARIABLE_PREFIX = "vars."


@dataclass(frozen=True)
class Counted:
    """What an answer summary counts of a version's answers: the keys whose
    values are counted (choices, scales, numbers, each matrix row, each
    variable), and the keys counted as one more (a matrix's rows, as the
    matrix: answered when any row is)."""

    valued: frozenset[str]
    groups: dict[str, str]


@dataclass(frozen=True)
class Compiled:
    version: int
    blocks: list[Block]
    definition: Definition

    @cached_property
    def layout(self) -> Layout:
        return Layout(self.blocks, self.definition)

    @cached_property
    def schema(self) -> dict[str, Any]:
        """The JSON Schema of its answers, untitled (schema_titled)."""
        return answers_schema(self.blocks, self.definition, layout=self.layout)

    def schema_titled(self, title: str) -> dict[str, Any]:
        """The schema with the form's title, which changes without a new
        version, where answers_schema puts it."""
        if not title:
            return self.schema
        titled: dict[str, Any] = {}
        for name, value in self.schema.items():
            titled[name] = value
            if name == "additionalProperties":
                titled["title"] = title
        return titled

    @cached_property
    def cost(self) -> Cost:
        """What checking its answers and showing its pages, in each of its
        languages, cost (language/cost.py)."""
        languages = [self.in_language(tag).blocks for tag in self.definition.translations]
        return cost_of(self.layout, languages)

    @cached_property
    def languages(self) -> list[str]:
        """The form's own language, then those it is translated into."""
        return [self.definition.language, *self.definition.translations]

    def in_language(self, language: str) -> "Compiled":
        """This version with its texts (blocks, endings) in `language`, each
        text a translation leaves out in the form's own; keys, values and
        logic are the same, so answers check alike in every language."""
        texts = self.definition.translations.get(language)
        if texts is None:
            return self
        shown = self._translated.get(language)
        if shown is None:
            endings = [
                e.model_dump(by_alias=True, exclude_none=True) for e in self.definition.endings
            ]
            _, blocks, endings = translation.translate("", dump_blocks(self.blocks), endings, texts)
            definition = self.definition.model_copy(
                update={"endings": [Ending.model_validate(e) for e in endings]}
            )
            shown = self._translated[language] = Compiled(
                self.version, BlockList.validate_python(blocks), definition
            )
        return shown

    @cached_property
    def _translated(self) -> dict[str, "Compiled"]:
        return {}

    @cached_property
    def counted(self) -> Counted:
        valued: list[str] = []
        groups: dict[str, str] = {}
        for question in questions(self.blocks):
            if isinstance(question, Matrix):
                rows = [f"{question.key}.{row.value}" for row in question.rows]
                valued.extend(rows)
                groups.update(dict.fromkeys(rows, question.key))
            elif isinstance(question, VALUED):
                valued.append(question.key)
        valued.extend(VARIABLE_PREFIX + variable.name for variable in self.definition.variables)
        return Counted(frozenset(valued), groups)

    @cached_property
    def has_logic(self) -> bool:
        """Whether anything beyond the blocks' own checks applies."""
        return bool(
            self.definition.hidden_fields
            or self.definition.variables
            or self.definition.logic
            or self.definition.endings
            or any(
                getattr(block, "visible_if", None) is not None
                or getattr(block, "required_if", None) is not None
                for block in self.blocks
            )
        )


_CACHE: OrderedDict[tuple[str, str, int], Compiled] = OrderedDict()  # least recent first
_LATEST: dict[tuple[str, str], int] = {}
_CACHE_MAX = 4096
# Compiled on worker threads (compile_ready) and read on the loop.
_LOCK = threading.Lock()


def cached(organization_id: str, form_id: str) -> Compiled | None:
    """The latest version compiled here, if any: a guess, checked against
    the version the post locks."""
    with _LOCK:
        version = _LATEST.get((organization_id, form_id))
        return None if version is None else _CACHE.get((organization_id, form_id, version))


def compile_version(
    organization_id: str,
    form_id: str,
    version: int,
    blocks: list[dict[str, Any]],
    definition: dict[str, Any] | None,
) -> Compiled:
    """The version of the form whose stored blocks and definition these
    are, compiled once in this process (the most recently used 4,096 kept)."""
    key = (organization_id, form_id, version)
    with _LOCK:
        known = _CACHE.get(key)
        if known is not None:
            _CACHE.move_to_end(key)
            return known
    made = Compiled(
        version, BlockList.validate_python(blocks), Definition.model_validate(definition or {})
    )
    return keep(organization_id, form_id, made)


def keep(organization_id: str, form_id: str, made: Compiled) -> Compiled:
    """`made` as its form's version `made.version` in the cache (a save's,
    compiled as it was checked), or the one kept already."""
    key = (organization_id, form_id, made.version)
    with _LOCK:
        made = _CACHE.setdefault(key, made)
        _CACHE.move_to_end(key)
        if _LATEST.get(key[:2], 0) < made.version:
            _LATEST[key[:2]] = made.version
        while len(_CACHE) > _CACHE_MAX:
            (organization, form, version), _ = _CACHE.popitem(last=False)
            if _LATEST.get((organization, form)) == version:
                del _LATEST[(organization, form)]
    return made


def compile_ready(
    organization_id: str,
    form_id: str,
    version: int,
    blocks: list[dict[str, Any]],
    definition: dict[str, Any] | None,
) -> Compiled:
    """compile_version, with its layout, its translations and its cost made
    too: what a worker thread does once for a version (a large form's take
    tens of milliseconds), so that the loop finds them ready."""
    made = compile_version(organization_id, form_id, version, blocks, definition)
    _ = made.cost  # lays it out and translates it
    return made
