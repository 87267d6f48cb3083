from formsapi.models.answer_count import AnswerCount
from formsapi.models.api_key import APIKey
from formsapi.models.audit_entry import AuditEntry
from formsapi.models.base import Base
from formsapi.models.copy_count import CopyCount
from formsapi.models.event import Event, EventType
from formsapi.models.event_outbox import EventOutbox
from formsapi.models.event_position import EventPosition
from formsapi.models.file import File, FileChunk
from formsapi.models.form import Form, FormStatus
from formsapi.models.form_draft import FormDraft
from formsapi.models.form_invitation import FormInvitation
from formsapi.models.form_version import FormVersion
from formsapi.models.funnel_count import FunnelCount
from formsapi.models.idempotency_key import IdempotencyKey
from formsapi.models.invitation import Invitation
from formsapi.models.mail_outbox import MailKind, MailOutbox, MailStatus
from formsapi.models.membership import Membership, Role
from formsapi.models.notification_recipient import Frequency, NotificationRecipient
from formsapi.models.organization import Organization, Plan
from formsapi.models.partial_response import PartialResponse
from formsapi.models.password_reset import PasswordReset
from formsapi.models.report_link import ReportLink
from formsapi.models.respondent_copy import RespondentCopy
from formsapi.models.respondent_mark import RespondentMark
from formsapi.models.spam_refusal import SpamRefusal
from formsapi.models.started_stamp import StartedStamp
from formsapi.models.submission import Submission
from formsapi.models.submission_count import SubmissionCount
from formsapi.models.submission_day_count import SubmissionDayCount
from formsapi.models.submission_tombstone import SubmissionTombstone
from formsapi.models.used_challenge import UsedChallenge
from formsapi.models.user import User
from formsapi.models.web_session import WebSession
from formsapi.models.webhook_attempt import WebhookAttempt
from formsapi.models.webhook_delivery import DeliveryStatus, WebhookDelivery
from formsapi.models.webhook_endpoint import WebhookEndpoint
from formsapi.models.webhook_subscription import WebhookSubscription

__all__ = [
    "APIKey",
    "AnswerCount",
    "AuditEntry",
    "Base",
    "CopyCount",
    "DeliveryStatus",
    "Event",
    "EventOutbox",
    "EventPosition",
    "EventType",
    "File",
    "FileChunk",
    "Form",
    "FormDraft",
    "FormInvitation",
    "FormStatus",
    "FormVersion",
    "Frequency",
    "FunnelCount",
    "IdempotencyKey",
    "Invitation",
    "MailKind",
    "MailOutbox",
    "MailStatus",
    "Membership",
    "NotificationRecipient",
    "Organization",
    "PartialResponse",
    "PasswordReset",
    "Plan",
    "ReportLink",
    "RespondentCopy",
    "RespondentMark",
    "Role",
    "SpamRefusal",
    "StartedStamp",
    "Submission",
    "SubmissionCount",
    "SubmissionDayCount",
    "SubmissionTombstone",
    "UsedChallenge",
    "User",
    "WebSession",
    "WebhookAttempt",
    "WebhookDelivery",
    "WebhookEndpoint",
    "WebhookSubscription",
]
