"""A form version ready to check answers: its blocks parsed and its logic
laid out once, kept by (organization, form, version) as versions never change."""

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from formsapi.form import translation
from formsapi.form.blocks import VALUED, Block, BlockList, Matrix, dump_blocks, questions
from formsapi.form.cost import Cost, cost_of
from formsapi.form.definition import Definition, Ending, Layout

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
    def cost(self) -> Cost:
        """What checking its answers and showing its pages, in each of its
        languages, cost (form/cost.py)."""
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


_CACHE: dict[tuple[str, str], Compiled] = {}
_CACHE_MAX = 4096


def cached(organization_id: str, form_id: str) -> Compiled | None:
    """The latest version compiled here, if any: a guess, checked against
    the version the post locks."""
    return _CACHE.get((organization_id, form_id))


def compile_version(
    organization_id: str,
    form_id: str,
    version: int,
    blocks: list[dict[str, Any]],
    definition: dict[str, Any] | None,
) -> Compiled:
    key = (organization_id, form_id)
    known = _CACHE.get(key)
    if known is not None and known.version == version:
        return known
    compiled = Compiled(
        version, BlockList.validate_python(blocks), Definition.model_validate(definition or {})
    )
    if known is None or known.version < version:
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        _CACHE[key] = compiled
    return compiled


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
