"""The client's hand-written models and endpoint table against the service's
own `/v1/openapi.json` (built in process): a field added, renamed or removed
on either side, a required-ness or basic type that differs, a new schema or
operation the client does not cover, fails here. So does the client importing
anything of the server: it installs without the server's dependencies."""

import ast
import copy
import inspect
import sys
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import BaseModel

import formsapi_client
from formsapi_client import _async, _calls, _core, _sync, models
from formsapi_client._core import ROUTES
from tests.support.contract import Contract

Doc = dict[str, Any]

# Each client model and the server schema it stands for; blocks and options
# as both the answers' (-Output) and the request bodies' (-Input) shapes.
BLOCKS: dict[type[BaseModel], str] = {
    models.ShortText: "ShortText",
    models.LongText: "LongText",
    models.Email: "Email",
    models.Url: "Url",
    models.Phone: "Phone",
    models.Number: "Number",
    models.Rating: "Rating",
    models.SingleChoice: "SingleChoice",
    models.MultipleChoice: "MultipleChoice",
    models.Date: "Date",
    models.Time: "Time",
    models.DateTime: "DateTime",
    models.YesNo: "YesNo",
    models.Nps: "Nps",
    models.Scale: "Scale",
    models.Dropdown: "Dropdown",
    models.Ranking: "Ranking",
    models.Matrix: "Matrix",
    models.FileUpload: "FileUpload",
    models.Row: "Row",
    models.Option: "Option",
    models.PageBreak: "PageBreak",
    models.HiddenField: "HiddenField",
    models.Variable: "Variable",
    models.SetAction: "SetAction",
    models.JumpAction: "JumpAction",
    models.LogicRule: "LogicRule",
    models.Ending: "Ending",
}
MODELS: dict[type[BaseModel], str] = {
    models.Pagination: "Pagination",
    models.FormSummary: "FormSummary",
    models.FormDetail: "FormDetail",
    models.FormsPage: "Page_FormSummary_",
    models.FormCreate: "FormCreate",
    models.FormUpdate: "FormUpdate",
    models.Quota: "Quota",
    models.QuotaState: "QuotaState",
    models.Heading: "Heading",
    models.Paragraph: "Paragraph",
    models.Submission: "SubmissionOut",
    models.SubmissionDetail: "SubmissionDetail",
    models.SubmissionDeleted: "SubmissionDeleted",
    models.SubmissionsPage: "Page_SubmissionOut_",
    models.Changes: "Changes",
    models.SubmissionCreate: "SubmissionCreate",
    models.SubmissionPatch: "SubmissionPatch",
    models.Partial: "PartialOut",
    models.PartialsPage: "Page_PartialOut_",
    models.OneResponse: "OneResponse",
    models.Recipient: "Recipient",
    models.InvitationCreate: "InvitationCreate",
    models.Invitation: "Invitation",
    models.InvitationMade: "InvitationMade",
    models.InvitationsMade: "InvitationsMade",
    models.InvitationsPage: "Page_Invitation_",
    models.Translation: "Translation",
    models.BlockTexts: "BlockTexts",
    models.EndingTexts: "EndingTexts",
    models.File: "FileOut",
    models.FileLinkCreate: "FileLinkCreate",
    models.FileLink: "FileLink",
    models.Event: "EventOut",
    models.EventsPage: "Events",
    models.WebhookEndpoint: "WebhookEndpointOut",
    models.WebhookEndpointCreated: "WebhookEndpointCreated",
    models.WebhookEndpointsPage: "Page_WebhookEndpointOut_",
    models.WebhookEndpointCreate: "WebhookEndpointCreate",
    models.WebhookEndpointUpdate: "WebhookEndpointUpdate",
    models.SecretRotated: "SecretRotated",
    models.TestSent: "TestSent",
    models.Delivery: "DeliveryOut",
    models.DeliveryDetail: "DeliveryDetail",
    models.Attempt: "Attempt",
    models.DeliveriesPage: "Page_DeliveryOut_",
    models.Recover: "Recover",
    models.Recovered: "Recovered",
    models.FormAnswerSummary: "FormAnswerSummary",
    models.QuestionSummary: "QuestionSummary",
    models.OptionCount: "OptionCount",
    models.ValueCount: "ValueCount",
    models.RankedOption: "RankedOption",
    models.MatrixRowSummary: "MatrixRowSummary",
    models.NpsFigures: "NpsFigures",
    models.VariableSummary: "VariableSummary",
    models.VariableValueCount: "VariableValueCount",
    models.EndingCount: "EndingCount",
    models.SummaryFilters: "SummaryFilters",
    models.TimeSeries: "TimeSeries",
    models.RefusalCount: "RefusalCount",
    models.RefusalCounts: "RefusalCounts",
    models.RespondentQuery: "RespondentQuery",
    models.RespondentPartial: "RespondentPartial",
    models.RespondentData: "RespondentData",
    models.RespondentErased: "RespondentErased",
    models.AuditActor: "AuditActor",
    models.AuditEntry: "AuditEntryOut",
    models.AuditEntries: "AuditEntries",
    models.Bucket: "Bucket",
    models.FollowedQuestion: "FollowedQuestion",
    models.Funnel: "Funnel",
    models.FunnelFilters: "FunnelFilters",
    models.FunnelHours: "FunnelHours",
    models.FunnelPage: "FunnelPage",
    models.Problem: "Problem",
    models.InvalidParam: "InvalidParam",
    # The event catalogue (the document's `webhooks`).
    models.SubmissionRedacted: "SubmissionRedacted",
    models.SubmissionThin: "SubmissionThin",
    models.SubmissionTombstone: "SubmissionTombstone",
    models.FormThin: "FormThin",
    models.FormStatusChange: "FormStatusChange",
    models.FormStatusChangeThin: "FormStatusChangeThin",
    models.FormTombstone: "FormTombstone",
    models.DisabledEndpoint: "DisabledEndpoint",
    models.Ping: "Ping",
    **{payload: payload.__name__ for payload in models.PAYLOAD_TYPES.values()},
}
# Enumerations: the client's Literal aliases must list the server's values.
ENUMS = {
    "EventType": models.EventType,
    "FormStatus": models.FormStatus,
    "QuotaAction": models.QuotaAction,
}


def _schemas(document: Doc) -> Doc:
    return document["components"]["schemas"]  # type: ignore[no-any-return]


def kinds(schema: Doc, defs: Doc) -> frozenset[str]:
    """The basic JSON types a schema allows: string, date-time, integer,
    number, boolean, null, object, array[item kinds]."""
    if "$ref" in schema:
        target = defs[schema["$ref"].rsplit("/", 1)[1]]
        return frozenset({"object"}) if "properties" in target else kinds(target, defs)
    for combinator in ("anyOf", "oneOf", "allOf"):
        if combinator in schema:
            return frozenset().union(*(kinds(part, defs) for part in schema[combinator]))
    if "const" in schema:
        value = schema["const"]
        return frozenset({"boolean" if isinstance(value, bool) else type(value).__name__})
    kind = schema.get("type")
    if kind == "string" and schema.get("format") == "date-time":
        return frozenset({"date-time"})
    if kind == "array":
        return frozenset({f"array[{','.join(sorted(kinds(schema['items'], defs)))}]"})
    if kind is None:
        return frozenset({"any"})
    return frozenset({kind})


def _client_schema(model: type[BaseModel]) -> tuple[Doc, Doc]:
    schema = model.model_json_schema(by_alias=True, mode="validation")
    return schema, schema.get("$defs", {})


def mismatches(model: type[BaseModel], name: str, document: Doc) -> list[str]:
    """How the client's model and the server's schema `name` differ."""
    server_defs = _schemas(document)
    server = server_defs.get(name)
    if server is None:
        return [f"{model.__name__}: the server has no schema {name}"]
    client, client_defs = _client_schema(model)
    found = []
    theirs, ours = server.get("properties", {}), client.get("properties", {})
    for field in sorted(theirs.keys() - ours.keys()):
        found.append(f"{model.__name__}: the server's {name}.{field} is not modelled")
    for field in sorted(ours.keys() - theirs.keys()):
        found.append(f"{model.__name__}.{field}: {name} has no such field")
    request = name.endswith("-Input") or model.__name__.endswith(("Create", "Update", "Patch"))
    for field in sorted(theirs.keys() & ours.keys()):
        server_required = field in server.get("required", [])
        client_required = field in client.get("required", [])
        # A block's `type` is its class's own tag: a default in the client.
        tag = name in _BLOCK_NAMES and field == "type"
        if server_required != client_required and not tag:
            found.append(
                f"{model.__name__}.{field}: required {client_required}, not {server_required}"
            )
        server_kinds = kinds(theirs[field], server_defs)
        client_kinds = kinds(ours[field], client_defs)
        if request and not client_required:
            client_kinds -= {"null"}  # None is "not sent", never a null
            server_kinds -= {"null"}
        if server_kinds != client_kinds:
            found.append(
                f"{model.__name__}.{field}: {sorted(client_kinds)}, server {sorted(server_kinds)}"
            )
    return found


_BLOCK_NAMES = {f"{name}-{side}" for name in BLOCKS.values() for side in ("Input", "Output")} | {
    "Heading",
    "Paragraph",
    "PageBreak",
}


def every_mismatch(document: Doc) -> list[str]:
    found = []
    for model, name in MODELS.items():
        found += mismatches(model, name, document)
    for model, name in BLOCKS.items():
        for side in ("Input", "Output"):
            found += mismatches(model, f"{name}-{side}", document)
    return found


@pytest.fixture(scope="module")
def document(contract: Contract) -> Doc:
    return contract.document


def test_every_model_has_the_fields_required_ness_and_types_of_the_servers(
    document: Doc,
) -> None:
    assert every_mismatch(document) == []


def test_the_export_s_last_line_is_modelled(document: Doc) -> None:
    export = document["paths"]["/v1/forms/{formId}/submissions/export"]["get"]
    lines = export["responses"]["200"]["content"]["application/x-ndjson"]["schema"]["oneOf"]
    [end] = [line for line in lines if line.get("title") == "ExportEnd"]
    client, defs = _client_schema(models.ExportEnd)
    assert set(client["required"]) == set(end["required"])
    assert {k: kinds(v, defs) for k, v in client["properties"].items()} == {
        k: kinds(v, {}) for k, v in end["properties"].items()
    }


def test_the_checker_notices_a_field_renamed_added_or_retyped(document: Doc) -> None:
    changed = copy.deepcopy(document)
    summary = _schemas(changed)["FormSummary"]
    summary["properties"]["changeSequence"] = summary["properties"].pop("changeSeq")
    summary["properties"]["responseCount"] = {"type": "string"}
    _schemas(changed)["ShortText-Output"]["properties"]["hint"] = {"type": "string"}
    found = every_mismatch(changed)
    assert "FormSummary: the server's FormSummary.changeSequence is not modelled" in found
    assert "FormSummary.changeSeq: FormSummary has no such field" in found
    assert "FormSummary.responseCount: ['integer'], server ['string']" in found
    assert "ShortText: the server's ShortText-Output.hint is not modelled" in found


def _referenced(schema: Any) -> set[str]:
    if isinstance(schema, dict):
        found = set()
        if "$ref" in schema:
            found.add(schema["$ref"].rsplit("/", 1)[1])
        for value in schema.values():
            found |= _referenced(value)
        return found
    if isinstance(schema, list):
        return set().union(*(_referenced(item) for item in schema)) if schema else set()
    return set()


def test_every_schema_an_operation_sends_or_takes_is_modelled(document: Doc) -> None:
    schemas = _schemas(document)
    seen: set[str] = set()
    # Webhooks too: what the service sends a receiver.
    queue = sorted(_referenced(document["paths"]) | _referenced(document["webhooks"]))
    while queue:
        name = queue.pop()
        if name not in seen:
            seen.add(name)
            queue.extend(_referenced(schemas[name]) - seen)
    modelled = set(MODELS.values()) | {
        f"{name}-{side}" for name in BLOCKS.values() for side in ("Input", "Output")
    }
    modelled.add("JsonValue")  # a rule: any JSON, the client's `Rule`
    assert seen - modelled - set(ENUMS) == set()


def test_the_enumerations_and_block_types_are_the_servers(document: Doc) -> None:
    schemas = _schemas(document)
    for name, alias in ENUMS.items():
        assert set(get_args(alias)) == set(schemas[name]["enum"]), name
    status = schemas["DeliveryOut"]["properties"]["status"]
    assert set(get_args(models.DeliveryStatus)) == set(status["enum"])
    blocks = schemas["FormDetail"]["properties"]["blocks"]["items"]
    assert set(models.BLOCK_TYPES) == set(blocks["discriminator"]["mapping"])


def test_every_webhook_has_its_typed_payload_in_the_client(document: Doc) -> None:
    webhooks = document["webhooks"]
    assert set(models.PAYLOAD_TYPES) == set(webhooks)
    for type_, payload in models.PAYLOAD_TYPES.items():
        body = webhooks[type_]["post"]["requestBody"]["content"]["application/json"]["schema"]
        assert body["$ref"].rsplit("/", 1)[1] == payload.__name__
        assert _schemas(document)[payload.__name__]["properties"]["type"]["const"] == type_
        assert get_args(payload.model_fields["type"].annotation) == (type_,)
        # Each variant of its data (whole, thin, redacted) is modelled alike.
        server = _schemas(document)[payload.__name__]["properties"]["data"]
        variants = [ref["$ref"].rsplit("/", 1)[1] for ref in server.get("oneOf", [server])]
        client = payload.model_fields["data"].annotation
        ours = {MODELS.get(kind) for kind in _variants(client)}
        assert ours == set(variants), type_


def _variants(annotation: Any) -> list[type[BaseModel]]:
    """The models a (tagged, annotated) union of models allows."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in get_args(annotation) for model in _variants(arg)]


def test_every_operation_has_a_client_method_in_both_clients(document: Doc) -> None:
    operations = {
        (method.upper(), path)
        for path, item in document["paths"].items()
        if path.startswith("/v1/")
        for method in item
    }
    assert {(method, "/v1" + path) for method, path in ROUTES.values()} == operations
    resources = {
        "forms": (_sync.Forms, _async.AsyncForms),
        "submissions": (_sync.Submissions, _async.AsyncSubmissions),
        "partials": (_sync.Partials, _async.AsyncPartials),
        "invitations": (_sync.Invitations, _async.AsyncInvitations),
        "events": (_sync.Events, _async.AsyncEvents),
        "webhook_endpoints": (_sync.WebhookEndpoints, _async.AsyncWebhookEndpoints),
        "files": (_sync.Files, _async.AsyncFiles),
        "respondents": (_sync.Respondents, _async.AsyncRespondents),
    }
    for name in ROUTES:
        resource, method = name.split(".")
        sync, asynchronous = (getattr(kind, method) for kind in resources[resource])
        # The twins take the same arguments.
        assert inspect.signature(sync).parameters == inspect.signature(asynchronous).parameters


# Each builder that sends query parameters, called with every optional one
# given: the parameters the client can send to each operation.
QUERIES: dict[str, list[_core.Call[Any]]] = {
    "forms.list": [_calls.forms_list(1, 50)],
    "forms.get": [_calls.forms_get("frm_1", 2, "fr")],
    "forms.summary": [
        _calls.forms_summary("frm_1", "2026-11-01", "2026-12-01", 2, "utm:ads", "plan:team")
    ],
    "forms.refusals": [_calls.forms_refusals("frm_1", 7)],
    "forms.timeseries": [
        _calls.forms_timeseries(
            "frm_1", "week", "Europe/Paris", "2026-11-01", "2026-12-01", "plan", 2
        )
    ],
    "forms.funnel": [_calls.forms_funnel("frm_1", "2026-11-01", "2026-12-01", 2)],
    "partials.list": [_calls.partials_list("frm_1", 1, 50)],
    "invitations.list": [_calls.invitations_list("frm_1", 1, 50)],
    "forms.delete": [_calls.forms_delete("frm_1", True)],
    "submissions.list": [_calls.submissions_list("frm_1", 1, 50, "2026-11-01")],
    "submissions.changes": [
        _calls.submissions_changes("frm_1", 0, 100),
        _calls.submissions_changes_json("frm_1", 0, 100),
    ],
    "events.list": [_calls.events_list("evt_1", ["submission.created"], "frm_1", 100)],
    "webhook_endpoints.deliveries": [_calls.endpoints_deliveries("whe_1", 1, 50, "failed")],
    "files.upload": [_calls.files_upload("frm_1", "cv", b"%PDF-1.7", "cv.pdf")],
}

# The client reads the export as typed rows (NDJSON); its CSV is for spreadsheets.
NOT_SENT = {("submissions.export", "format")}


def test_every_operation_s_query_parameters_are_the_ones_the_client_sends(document: Doc) -> None:
    # A parameter renamed or added on either side fails here; an operation
    # missing from QUERIES must take none.
    for name, (method, path) in ROUTES.items():
        operation = document["paths"]["/v1" + path][method.lower()]
        wanted = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
        wanted -= {parameter for route, parameter in NOT_SENT if route == name}
        sent = {key for built in QUERIES.get(name, []) for key in built.params or {}}
        assert sent == wanted, name


def test_the_two_clients_offer_the_same_methods() -> None:
    pairs = [
        (_sync.Client, _async.AsyncClient),
        (_sync.Forms, _async.AsyncForms),
        (_sync.Submissions, _async.AsyncSubmissions),
        (_sync.Partials, _async.AsyncPartials),
        (_sync.Events, _async.AsyncEvents),
        (_sync.WebhookEndpoints, _async.AsyncWebhookEndpoints),
        (_sync.Files, _async.AsyncFiles),
    ]
    for sync, asynchronous in pairs:
        public = {n for n in vars(sync) if not n.startswith("_")}
        assert public == {n for n in vars(asynchronous) if not n.startswith("_")}
        for name in public - {"export", "stream"}:  # context managers, `async with`
            method = getattr(asynchronous, name)
            assert inspect.iscoroutinefunction(method) or inspect.isasyncgenfunction(method)


def _imports(path: Path) -> set[str]:
    """The modules a file needs (absolute imports), by full name; an import
    tried with a fallback on ImportError is optional, not needed."""
    tree = ast.parse(path.read_text())
    optional = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.Try)
        and any(
            isinstance(handler.type, ast.Name) and handler.type.id == "ImportError"
            for handler in node.handlers
        )
        for statement in node.body
        for inner in ast.walk(statement)
    }
    found = set()
    for node in ast.walk(tree):
        if id(node) in optional:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def test_the_client_imports_nothing_of_the_server() -> None:
    """The core needs only its three dependencies (others only tried, with a
    fallback; never the `sync` subpackage or the `dlt` module, which need
    their extras); no part of the distribution imports the server."""
    source = Path(formsapi_client.__file__).parent
    allowed = {"formsapi_client", "httpx", "pydantic", "standardwebhooks"}
    for path in source.rglob("*.py"):
        imported = _imports(path)
        assert not {name for name in imported if name.split(".")[0] == "formsapi"}, path
        if "sync" in path.relative_to(source).parts or path.stem == "dlt":
            continue
        tops = {name.split(".")[0] for name in imported}
        assert tops - allowed - sys.stdlib_module_names == set(), path
        extras = ("formsapi_client.sync", "formsapi_client.dlt")
        assert not {name for name in imported if name.startswith(extras)}, path
