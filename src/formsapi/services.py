"""What create_app builds once per process and every handler may use: the
database's engines and sessions, the intake, limiters, stores, caches and
buffers. One typed object on the app, so a reader (and mypy) can follow
each use to where it was made, instead of untyped `app.state` attributes.

It names its parts' types only (they import it, not it them): any module
may import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request
from starlette.applications import Starlette

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

    from formsapi.api_key.cache import PrincipalCache
    from formsapi.api_key.epoch import AuthEpoch
    from formsapi.api_key.last_use import LastUse
    from formsapi.config import Settings
    from formsapi.db.session import ReadSession, WriteSession
    from formsapi.file.storage import Storages
    from formsapi.funnel.buffer import Buffer as FunnelBuffer
    from formsapi.kit.fair import FairShare
    from formsapi.kit.mail import Mailer
    from formsapi.kit.redis_pipe import RedisPipe
    from formsapi.kit.secretbox import SecretBox
    from formsapi.kit.turns import Turns
    from formsapi.ratelimit.service import (
        FormSaveThrottle,
        PartialThrottle,
        PasswordThrottle,
        PublicPostThrottle,
        RateLimiter,
        ResumeMailThrottle,
        SignInThrottle,
        UploadBytesThrottle,
        UploadThrottle,
    )
    from formsapi.spam.buffer import Refusals
    from formsapi.spam.challenge import Challenges
    from formsapi.submission.intake import Intake


@dataclass
class Services:
    settings: Settings
    engine: AsyncEngine
    owns_engine: bool  # made from the settings, so closed at shutdown
    sessionmaker: async_sessionmaker[WriteSession]
    read_engine: AsyncEngine  # the same, each statement in autocommit
    read_sessionmaker: async_sessionmaker[ReadSession]
    redis: RedisPipe | None
    secret_box: SecretBox | None
    last_use: LastUse
    fair_share: FairShare  # costly forms' checks and pages, off the loop, in turn
    form_writes: Turns
    intake: Intake
    funnel: FunnelBuffer
    refusals: Refusals
    storages: Storages
    mailer: Mailer
    challenges: Challenges
    auth_epoch: AuthEpoch
    principal_cache: PrincipalCache
    rate_limiter: RateLimiter
    sign_in_throttle: SignInThrottle
    resume_mail_throttle: ResumeMailThrottle
    partial_throttle: PartialThrottle
    upload_throttle: UploadThrottle
    form_saves: FormSaveThrottle
    upload_bytes: UploadBytesThrottle
    public_post_throttle: PublicPostThrottle
    password_throttle: PasswordThrottle


def services_of(app: Starlette) -> Services:
    made: Services = app.state.services
    return made


def services(request: Request) -> Services:
    """The services of the app serving `request`."""
    return services_of(request.app)


ServicesDep = Annotated[Services, Depends(services)]
