"""The settings area's templates: one folder a section (the web/ module that
renders them), every name a page renders is a template that compiles, and
markup shared between pages comes from the macros, written out once."""

import re
from pathlib import Path
from types import SimpleNamespace

from formsapi.web import context
from formsapi.web.context import CSRF_FIELD, templates

WEB = Path(context.__file__).parent
TEMPLATES = WEB / "templates"
CSRF_INPUT = '<input type="hidden" name="csrf_token"'
_NAMED = re.compile(r'"([a-z_]+/[a-z_]+\.html|[a-z_]+\.html)"')


def _names() -> list[str]:
    return sorted(path.relative_to(TEMPLATES).as_posix() for path in TEMPLATES.rglob("*.html"))


def test_every_template_compiles() -> None:
    for name in _names():
        templates.env.get_template(name)


def test_every_page_renders_a_template_that_exists() -> None:
    names = set(_names())
    rendered = {
        (module.name, name)
        for module in WEB.glob("*.py")
        for name in _NAMED.findall(module.read_text())
    }
    assert rendered
    assert {(module, name) for module, name in rendered if name not in names} == set()


def test_pages_sit_in_their_sections_folder() -> None:
    # At the top only what sections share: the layout, the macros and the charts.
    assert {name for name in _names() if "/" not in name} == {
        "layout.html",
        "_macros.html",
        "_charts.html",
    }
    sections = {path.stem for path in WEB.glob("*.py")} - {"__init__", "context", "chart", "charts"}
    assert {name.split("/")[0] for name in _names() if "/" in name} <= sections


def test_autoescaping_is_on() -> None:
    page = templates.env.from_string("{{ text }}").render(text="<b>")
    assert page == "&lt;b&gt;"


def test_the_csrf_field_is_written_once_by_its_macro() -> None:
    writers = [name for name in _names() if CSRF_INPUT in (TEMPLATES / name).read_text()]
    assert writers == ["_macros.html"]
    assert f'name="{CSRF_FIELD}"' in CSRF_INPUT


def test_the_csrf_macro_writes_the_viewers_token_or_the_one_it_is_given() -> None:
    page = templates.env.from_string(
        '{% import "_macros.html" as ui with context %}{{ ui.csrf() }}|{{ ui.csrf(other) }}'
    )
    viewer = SimpleNamespace(csrf_token="a<b")
    assert page.render(viewer=viewer, other="c") == (
        '<input type="hidden" name="csrf_token" value="a&lt;b">|'
        '<input type="hidden" name="csrf_token" value="c">'
    )
