"""The hosted page in the respondent's language: from the link's `?lang=`,
else the browser's Accept-Language, with a switch on every page that keeps
the answers; values stored whatever the language."""

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from tests.conftest import Api
from tests.form.test_translations import FORM
from tests.hosted.test_logic_pages import _post
from tests.support.factories import publish_over_api

PAGED = {
    **FORM,
    "blocks": [*FORM["blocks"][:2], {"type": "page_break", "key": "more"}, FORM["blocks"][2]],
}


@pytest.fixture
def settings(database_url: str) -> Settings:
    # A key on PostgreSQL too: a text ending is then a page of its own (hosted/ending_pass.py).
    return Settings(database_url=database_url, rate_limit_standard=100_000, secret_key="l" * 40)


async def test_the_browsers_language_is_chosen_and_the_link_can_say_another(
    api: Api, session: AsyncSession
) -> None:
    form_id, _, _ = await publish_over_api(api, session, PAGED)
    url = f"/f/{form_id}"

    french = await api.get(url, headers={"Accept-Language": "de-DE, fr-CH;q=0.9, en;q=0.5"})
    assert '<html lang="fr">' in french.text
    assert "<h1>Atelier</h1>" in french.text
    assert "Votre nom" in french.text
    assert "À propos de vous" in french.text
    assert ">Suivant</button>" in french.text
    assert 'value="en" lang="en"' in french.text  # the switch to English

    english = await api.get(f"{url}?lang=en", headers={"Accept-Language": "fr"})
    assert "<h1>Workshop</h1>" in english.text
    assert ">Next</button>" in english.text

    # Nothing typed: the page's own word for "required".
    missing = await api.post(url, data=_post(french.text, {}))
    assert missing.status_code == 422
    assert "Votre nom: est obligatoire" in missing.text


async def test_switching_language_keeps_the_answers_and_stores_values(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, PAGED)
    url = f"/f/{form_id}"
    french = await api.get(f"{url}?lang=fr")
    second = await api.post(url, data=_post(french.text, {"name": "Ada"}))
    assert "Qui vient ?" in second.text
    assert "Moi seul" in second.text

    switched = await api.post(url, data={**_post(second.text, {"plan": "me"}), "_switch": ["en"]})
    assert switched.status_code == 200
    assert "Who is coming?" in switched.text
    assert 'value="me" checked' in switched.text  # the answer kept across the switch
    assert "Page 2 of 2" in switched.text

    done = await api.post(url, data=_post(switched.text, {"plan": "me"}))
    assert done.status_code == 303
    [stored] = (await api.get(f"/v1/forms/{form_id}/submissions", secret)).json()["data"]
    assert stored["answers"] == {"name": "Ada", "plan": "me"}  # values, not labels


async def test_every_error_and_the_thank_you_page_speak_the_pages_language(
    api: Api, session: AsyncSession
) -> None:
    french_words = {
        "invalid": "Vérifiez cette réponse",
        "thanks": "Merci !",
        "received": "Vos réponses à « {title} » sont bien arrivées.",
    }
    form = {
        **FORM,
        "blocks": [*FORM["blocks"], {"type": "email", "key": "mail", "title": "Email"}],
        "endings": [],
        "translations": {
            "fr": {
                **FORM["translations"]["fr"],
                "endings": {},
                "messages": {**FORM["translations"]["fr"]["messages"], **french_words},
            }
        },
    }
    form_id, _, _ = await publish_over_api(api, session, form)
    url = f"/f/{form_id}"
    page = await api.get(f"{url}?lang=fr")

    wrong = await api.post(url, data=_post(page.text, {"name": "Ada", "mail": "not-an-address"}))
    assert wrong.status_code == 422
    assert "Email: Vérifiez cette réponse" in wrong.text
    assert "must be" not in wrong.text  # the check's English words stay out
    sent = await api.post(url, data=_post(wrong.text, {"name": "Ada", "mail": "ada@example.com"}))
    assert sent.status_code == 303
    thanks = await api.get(sent.headers["location"])
    assert "<h1>Merci !</h1>" in thanks.text
    assert "Vos réponses à « Atelier » sont bien arrivées." in thanks.text

    # In the form's own language, with no words of its own: the precise check.
    english = await api.get(f"{url}?lang=en")
    wrong = await api.post(url, data=_post(english.text, {"name": "Ada", "mail": "nope"}))
    assert "must be an email address" in wrong.text
