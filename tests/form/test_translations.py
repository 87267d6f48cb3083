"""A form's texts in several languages over the API: `?lang=` returns them,
`languages` lists them, and `missingTranslations` says what each leaves in
the form's own language."""

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from tests.conftest import Api
from tests.support.factories import publish_over_api

FORM: dict[str, Any] = {
    "title": "Workshop",
    "blocks": [
        {"type": "heading", "text": "About you"},
        {"type": "short_text", "key": "name", "title": "Your name", "required": True},
        {"type": "single_choice", "key": "plan", "title": "Who is coming?",
         "options": [{"value": "me", "label": "Just me"}, {"value": "team", "label": "My team"}]},
    ],
    "endings": [{"key": "thanks", "title": "Thank you", "text": "See you there."}],
    "language": "en",
    "translations": {
        "fr": {
            "title": "Atelier",
            "blocks": {
                "0": {"text": "À propos de vous"},
                "name": {"title": "Votre nom"},
                "plan": {"title": "Qui vient ?", "options": {"me": "Moi seul"}},
            },
            "endings": {"thanks": {"title": "Merci"}},
            "messages": {"next": "Suivant", "send": "Envoyer", "required": "est obligatoire"},
        }
    },
}  # fmt: skip


async def test_a_form_reads_in_a_language_it_has(api: Api, session: AsyncSession) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)

    french = await api.get(f"/v1/forms/{form_id}?lang=fr-CA", secret)  # fr-CA: the French
    assert french.status_code == 200, french.text
    assert french.headers["content-language"] == "fr"
    body = french.json()
    assert body["contentLanguage"] == "fr"
    assert body["title"] == "Atelier"
    heading, name, plan = body["blocks"]
    assert heading["text"] == "À propos de vous"
    assert name["title"] == "Votre nom"
    assert plan["title"] == "Qui vient ?"
    # Values stay: answers never depend on the language.
    assert plan["options"] == [
        {"value": "me", "label": "Moi seul"},
        {"value": "team", "label": "My team"},  # not translated: the form's own
    ]
    assert body["endings"] == [{"key": "thanks", "title": "Merci", "text": "See you there."}]
    assert body["languages"] == ["en", "fr"]
    assert body["missingTranslations"] == {"fr": ["/blocks/2/options/1/label", "/endings/0/text"]}

    own = (await api.get(f"/v1/forms/{form_id}", secret)).json()
    assert own["contentLanguage"] == "en"
    assert own["title"] == "Workshop"
    assert own["blocks"][1]["title"] == "Your name"
    assert own["translations"]["fr"]["blocks"]["name"] == {"title": "Votre nom"}


async def test_a_language_the_form_lacks_is_a_clear_400(api: Api, session: AsyncSession) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    for lang in ("de", "not a tag", "x" * 35):
        response = await api.get(f"/v1/forms/{form_id}?lang={lang}", secret)
        assert response.status_code == 400, response.text
    assert "it has en, fr" in response.json()["detail"]


async def test_a_translation_of_what_the_form_lacks_is_refused_with_its_pointer(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    wrong = {
        "fr": {
            "blocks": {
                "nobody": {"title": "?"},
                "plan": {"options": {"everyone": "Tous"}},
                "name": {"minLabel": "Bas"},
            },
            "endings": {"bye": {"title": "Au revoir"}},
        },
        "en": {"title": "Workshop"},
    }
    response = await api.patch(f"/v1/forms/{form_id}", secret, json={"translations": wrong})
    assert response.status_code == 422
    pointers = {error["pointer"] for error in response.json()["errors"]}
    assert pointers == {
        "/translations/fr/blocks/nobody",
        "/translations/fr/blocks/plan/options/everyone",
        "/translations/fr/blocks/name/minLabel",
        "/translations/fr/endings/bye",
        "/translations/en",
    }


async def test_a_submission_keeps_the_language_it_was_answered_in(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    url = f"/v1/forms/{form_id}/submissions"

    french = await api.post(
        url, secret, json={"answers": {"name": "Ada", "plan": "me"}, "language": "fr"}
    )
    own = await api.post(url, secret, json={"answers": {"name": "Bob", "plan": "me"}})
    unknown = await api.post(url, secret, json={"answers": {"name": "Eve"}, "language": "de"})

    assert french.status_code == 201, french.text
    assert french.json()["language"] == "fr"
    assert french.json()["answers"] == {"name": "Ada", "plan": "me"}  # values, whatever the words
    assert own.json()["language"] == "en"
    assert unknown.status_code == 422
    assert unknown.json()["errors"] == [
        {"pointer": "/language", "detail": "must be one of the form's languages: en, fr"}
    ]
    changes = (await api.get(f"{url}/changes", secret)).json()["data"]
    assert [c["language"] for c in changes] == ["fr", "en"]

    # The hosted page stores the language it was shown in.
    page = await api.post(f"/f/{form_id}?lang=fr", data={"name": "Cy", "plan": "team"})
    # Its ending: a page of its own, or (PostgreSQL without a key to sign its
    # pass with) this answer.
    assert page.status_code in (200, 303), page.text
    latest = (await api.get(f"{url}/changes?after=2", secret)).json()["data"]
    assert [(c["answers"]["name"], c["language"]) for c in latest] == [("Cy", "fr")]
