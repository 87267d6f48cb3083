"""A form version ready to check answers: its blocks parsed and its logic
laid out once, kept by (organization, form, version) as versions never change."""

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from formsapi.form.blocks import Block, BlockList
from formsapi.form.definition import Definition, Layout


@dataclass(frozen=True)
class Compiled:
    version: int
    blocks: list[Block]
    definition: Definition

    @cached_property
    def layout(self) -> Layout:
        return Layout(self.blocks, self.definition)

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
