"""A2A Agent Cards as ``lmos:Agent`` Thing Descriptions, and back.

A card is validated with the official A2A types (the ``a2a-sdk`` protobuf messages and their REQUIRED field
annotations), then mapped member by member: name/description/version, ``provider`` → ``lmos:vendor``, skills →
``lmos:capabilities``, ``supportedInterfaces`` (A2A 0.3: ``url`` and ``additionalInterfaces``) → top-level forms,
``securitySchemes`` → ``securityDefinitions`` and the requirements → ``security`` (AND and OR kept apart), icon and
documentation → links. Every member without a TD counterpart (and every member whose value the TD rules
would refuse, such as a version that is not SemVer in ``version.instance``) is kept verbatim under ``a2a:card``,
so that exporting an imported card gives back exactly the card, its signatures included unless the description
was edited since (they would no longer verify). Descriptions that never were cards export to cards built from
their TD members alone (docs/interop.md lists what is lossy).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from registry.descriptions.model import A2A_CARD_TYPE, A2A_NAMESPACE, LMOS_NAMESPACE, TD11_CONTEXT, lmos_member
from registry.descriptions.summary import Summary, summarise
from registry.descriptions.validation import SEMVER, FieldError
from registry.descriptions.versions import version_problem
from registry.semantic.rdf import lmos_normalised

if TYPE_CHECKING:
    from a2a.types import AgentCard

#: The type that marks a description imported from an Agent Card (the ``a2a`` convention).
CARD_TYPE = A2A_CARD_TYPE
#: Members of the TD that hold A2A JSON verbatim.
CARD_MEMBER = "a2a:card"
SKILL_MEMBER = "a2a:skill"
SCHEME_MEMBER = "a2a:scheme"
REQUIREMENTS_MEMBER = "a2a:securityRequirements"
#: The ``security`` member of an A2A 0.3 card (its shape of the security requirements), kept for the way back.
LEGACY_REQUIREMENTS_MEMBER = "a2a:security"
#: The digest of an imported signed card's content (without ``signatures``): a card whose content no longer has
#: it was edited after signing, and its signatures are dropped on export.
SIGNED_CONTENT_MEMBER = "a2a:signedContent"
#: Names the import gives the combo schemes of the card's security requirements.
COMBO_SCHEME = "a2a_combo_sc"
#: Most alternatives a TD's security expands to when it is exported (combos can nest and multiply).
MAX_REQUIREMENT_ALTERNATIVES = 64
BINDING, PROTOCOL_VERSION, TENANT = "a2a:protocolBinding", "a2a:protocolVersion", "a2a:tenant"
CONTEXT: list[Any] = [
    TD11_CONTEXT,
    # The TD schema allows prefix definitions only (no @json terms): nested A2A JSON is partly RDF.
    {"lmos": LMOS_NAMESPACE, "a2a": A2A_NAMESPACE},
]
#: The root operation an A2A interface is given: A2A tasks are the agent's running actions (GetTask, ListTasks).
INTERFACE_OP = "queryallactions"
_HTTP_URL = re.compile(r"^https?://[^\s/$.?#][^\s]*$", re.IGNORECASE)
#: Skill members carried as LMOS capability members (the rest stay under ``a2a:skill``).
_SKILL_MEMBERS = {
    "id": "lmos:id",
    "name": "lmos:name",
    "description": "lmos:description",
    "tags": "lmos:tags",
    "examples": "lmos:examples",
    "inputModes": "lmos:inputModes",
    "outputModes": "lmos:outputModes",
}
#: The skill member of each capability member: the skill's own names, and their LMOS names.
_SKILL_KEYS = {**{value: key for key, value in _SKILL_MEMBERS.items()}, **{key: key for key in _SKILL_MEMBERS}}
_DEFAULT_MODES = ["text/plain", "application/json"]


class CardError(ValueError):
    """The body is not a valid A2A Agent Card; ``errors`` name every problem."""

    def __init__(self, errors: list[FieldError]) -> None:
        super().__init__("; ".join(f"{error.field}: {error.description}" for error in errors))
        self.errors = errors


def parse_card(card: Any) -> AgentCard:
    """The card as the official A2A type, or :class:`CardError` listing what the A2A specification requires.

    Cards of A2A 0.3 (``url``, ``preferredTransport``) are read the way the SDK's card resolver reads them. The
    SDK (protobuf, pydantic) loads on the first card, not with every process.
    """
    from a2a.client.card_resolver import parse_agent_card
    from a2a.utils.errors import InvalidParamsError
    from a2a.utils.proto_utils import validate_proto_required_fields
    from google.protobuf.json_format import ParseError

    if not isinstance(card, dict):
        raise CardError([FieldError("(root)", "an Agent Card must be a JSON object")])
    version = card.get("version")
    problem = version_problem(version) if isinstance(version, str) else None
    if problem is not None:
        raise CardError([FieldError("version", f"the card's version is out of bounds: {problem}")])
    try:
        parsed = parse_agent_card(copy.deepcopy(card))
    except ParseError as error:
        raise CardError([FieldError("(root)", f"not an A2A Agent Card: {error}")]) from error
    try:
        validate_proto_required_fields(parsed)
    except InvalidParamsError as error:
        details = (error.data or {}).get("errors", [])
        raise CardError(
            [FieldError(_camel_path(item["field"]), item["message"]) for item in details]
            or [FieldError("(root)", str(error))]
        ) from error
    return parsed


def _camel_path(path: str) -> str:
    """``supported_interfaces[0].protocol_binding`` → ``supportedInterfaces[0].protocolBinding`` (the JSON names)."""
    return re.sub(r"_([a-z])", lambda match: match.group(1).upper(), path)


def signatures_of(card: dict[str, Any]) -> list[dict[str, Any]]:
    """The card's JWS signatures (each ``protected``, ``signature``, optional ``header``), as registered."""
    signatures = card.get("signatures")
    return [item for item in signatures if isinstance(item, dict)] if isinstance(signatures, list) else []


# -- card → TD


def card_to_description(card: dict[str, Any], thing_id: str) -> dict[str, Any]:
    """The ``lmos:Agent`` TD of a (validated) card; ``description_to_card`` of it gives ``card`` back."""
    kept = dict(card)
    document: dict[str, Any] = {"@context": CONTEXT, "@type": ["lmos:Agent", CARD_TYPE], "id": thing_id}
    document["title"] = kept.pop("name")
    if isinstance(kept.get("description"), str):
        document["description"] = kept.pop("description")
    version = kept.get("version")
    if isinstance(version, str) and SEMVER.match(version):
        # LMOS agents carry a SemVer version.instance; any other version stays with the card.
        document["version"] = {"instance": kept.pop("version")}
    metadata = _card_metadata(kept)
    if metadata:
        document["lmos:metadata"] = metadata
    links = _card_links(kept)
    if links:
        document["links"] = links
    forms = _card_forms(kept)
    if forms:
        document["forms"] = forms
    document.update(_security(kept))
    if signatures_of(card):
        document[SIGNED_CONTENT_MEMBER] = content_digest(card)
    if kept:
        document[CARD_MEMBER] = kept
    return document


def _card_metadata(kept: dict[str, Any]) -> dict[str, Any]:
    """``lmos:metadata`` of the card's provider and skills, taken from ``kept`` when they map."""
    metadata: dict[str, Any] = {}
    provider = kept.get("provider")
    if isinstance(provider, dict) and _mappable_provider(provider):
        kept.pop("provider")
        metadata["lmos:vendor"] = {"lmos:name": provider["organization"], "lmos:url": provider["url"]}
    skills = kept.get("skills")
    if isinstance(skills, list) and all(isinstance(skill, dict) for skill in skills):
        metadata["lmos:capabilities"] = [_capability(skill) for skill in kept.pop("skills")]
    return metadata


def _card_links(kept: dict[str, Any]) -> list[dict[str, Any]]:
    """The TD links of the card's documentation and icon URLs, taken from ``kept``."""
    links = []
    for member, rel in (("documentationUrl", "service-doc"), ("iconUrl", "icon")):
        if isinstance(kept.get(member), str):
            links.append({"href": kept.pop(member), "rel": rel})
    return links


def _card_forms(kept: dict[str, Any]) -> list[dict[str, Any]]:
    """The forms of the card's interfaces: its ``supportedInterfaces`` (taken from ``kept`` when they all map), or
    those of an A2A 0.3 card, whose url and additionalInterfaces stay with the card."""
    interfaces = kept.get("supportedInterfaces")
    if isinstance(interfaces, list) and interfaces and all(_mappable_interface(item) for item in interfaces):
        return [_form(item) for item in kept.pop("supportedInterfaces")]
    return _legacy_forms(kept)


def content_digest(card: dict[str, Any]) -> str:
    """``sha256:`` of the card's members but ``signatures``, as canonical JSON (sorted keys, no white space)."""
    content = {key: value for key, value in card.items() if key != "signatures"}
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def _legacy_forms(kept: dict[str, Any]) -> list[dict[str, Any]]:
    """The forms of an A2A 0.3 card: its ``url`` (in its ``preferredTransport``, JSONRPC by default) and each of
    its ``additionalInterfaces`` (``url``, ``transport``), once per (url, transport)."""
    forms: list[dict[str, Any]] = []
    url, transport = kept.get("url"), kept.get("preferredTransport", "JSONRPC")
    candidates = [{"url": url, "transport": transport}]
    additional = kept.get("additionalInterfaces")
    candidates += [item for item in additional if isinstance(item, dict)] if isinstance(additional, list) else []
    seen: set[tuple[str, str]] = set()
    for candidate in candidates:
        href, binding = candidate.get("url"), candidate.get("transport")
        if not (isinstance(href, str) and href and isinstance(binding, str)) or (href, binding) in seen:
            continue
        seen.add((href, binding))
        form: dict[str, Any] = {"href": href, "op": INTERFACE_OP, BINDING: binding}
        if isinstance(kept.get("protocolVersion"), str):
            form[PROTOCOL_VERSION] = kept["protocolVersion"]
        forms.append(form)
    return forms


def _mappable_provider(provider: dict[str, Any]) -> bool:
    return (
        set(provider) == {"organization", "url"}
        and isinstance(provider["organization"], str)
        and provider["organization"].strip() != ""
        and isinstance(provider["url"], str)
        and _HTTP_URL.match(provider["url"]) is not None
    )


def _capability(skill: dict[str, Any]) -> dict[str, Any]:
    capability = {_SKILL_MEMBERS[key]: value for key, value in skill.items() if key in _SKILL_MEMBERS}
    rest = {key: value for key, value in skill.items() if key not in _SKILL_MEMBERS}
    if rest:
        capability[SKILL_MEMBER] = rest
    return capability


def _mappable_interface(interface: Any) -> bool:
    return (
        isinstance(interface, dict)
        and isinstance(interface.get("url"), str)
        and set(interface) <= {"url", "protocolBinding", "protocolVersion", "tenant"}
    )


def _form(interface: dict[str, Any]) -> dict[str, Any]:
    form: dict[str, Any] = {"href": interface["url"], "op": INTERFACE_OP}
    for member, key in (("protocolBinding", BINDING), ("protocolVersion", PROTOCOL_VERSION), ("tenant", TENANT)):
        if member in interface:
            form[key] = interface[member]
    return form


def _td_scheme(scheme: Any) -> dict[str, Any]:
    """The TD security scheme of an A2A scheme (the A2A original is kept under ``a2a:scheme`` for the way back)."""
    kind, inner = _scheme_kind(scheme)
    td = _TD_SCHEMES.get(kind, _auto_scheme)(inner)
    if isinstance(inner.get("description"), str):
        td["description"] = inner["description"]
    td = {key: value for key, value in td.items() if value is not None}
    td[SCHEME_MEMBER] = scheme
    return td


def _scheme_kind(scheme: Any) -> tuple[str, dict[str, Any]]:
    """The A2A 1.0 member an A2A scheme is held in (``apiKeySecurityScheme``…) and its content; ``""`` and ``{}``
    for a scheme of neither shape."""
    if isinstance(scheme, dict) and isinstance(scheme.get("type"), str):
        kind, inner = _legacy_scheme(scheme)
    elif isinstance(scheme, dict) and len(scheme) == 1:
        kind, inner = next(iter(scheme.items()))
    else:
        kind, inner = "", {}
    return kind, inner if isinstance(inner, dict) else {}


def _apikey_scheme(inner: dict[str, Any]) -> dict[str, Any]:
    return {"scheme": "apikey", "in": inner.get("location", "header"), "name": inner.get("name")}


def _http_scheme(inner: dict[str, Any]) -> dict[str, Any]:
    """Basic and Bearer authentication; any other HTTP scheme has no TD counterpart."""
    kind = str(inner.get("scheme", "")).lower()
    if kind not in ("basic", "bearer"):
        return _auto_scheme(inner)
    td = {"scheme": kind}
    if inner.get("bearerFormat"):
        td["format"] = inner["bearerFormat"]
    return td


def _oauth2_scheme(inner: dict[str, Any]) -> dict[str, Any]:
    return {"scheme": "oauth2", **_oauth2_flow(inner.get("flows"))}


def _auto_scheme(inner: dict[str, Any]) -> dict[str, Any]:
    """OpenID Connect, mutual TLS and legacy 0.3 shapes have no TD scheme: "auto" says the client finds out."""
    return {"scheme": "auto"}


#: The TD scheme of each A2A 1.0 scheme member with a TD counterpart.
_TD_SCHEMES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "apiKeySecurityScheme": _apikey_scheme,
    "httpAuthSecurityScheme": _http_scheme,
    "oauth2SecurityScheme": _oauth2_scheme,
}


def _legacy_scheme(scheme: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """An A2A 0.3 scheme (OpenAPI's shape, ``type`` naming it) as the A2A 1.0 member it corresponds to."""
    kind = scheme["type"]
    if kind == "apiKey":
        return "apiKeySecurityScheme", {**scheme, "location": scheme.get("in", "header")}
    if kind == "http":
        return "httpAuthSecurityScheme", scheme
    if kind == "oauth2":
        return "oauth2SecurityScheme", scheme
    return "", scheme


def _oauth2_flow(flows: Any) -> dict[str, Any]:
    if not isinstance(flows, dict):
        return {}
    for name, td_flow in (("authorizationCode", "code"), ("clientCredentials", "client"), ("deviceCode", "device")):
        flow = flows.get(name)
        if isinstance(flow, dict):
            mapped = {
                "flow": td_flow,
                "authorization": flow.get("authorizationUrl"),
                "token": flow.get("tokenUrl"),
                "scopes": sorted(flow["scopes"]) if isinstance(flow.get("scopes"), dict) else None,
            }
            return {key: value for key, value in mapped.items() if value}
    return {}


def _security(kept: dict[str, Any]) -> dict[str, Any]:
    """``securityDefinitions`` and ``security`` of the card's schemes and requirements. Requirements are
    alternatives (any one suffices), each naming schemes that are all needed: one alternative is the TD's
    ``security`` array (all of it needed), several a ``oneOf`` combo of them, an alternative of several schemes an
    ``allOf`` combo. A2A 1.0 ``securityRequirements`` and A2A 0.3 ``security`` alike; the original is kept."""
    schemes = kept.get("securitySchemes")
    if not (isinstance(schemes, dict) and schemes):
        return {"securityDefinitions": {"nosec_sc": {"scheme": "nosec"}}, "security": ["nosec_sc"]}
    definitions = {name: _td_scheme(scheme) for name, scheme in kept.pop("securitySchemes").items()}
    security: dict[str, Any] = {"securityDefinitions": definitions}
    legacy = "securityRequirements" not in kept and "security" in kept
    requirements = kept.pop("security" if legacy else "securityRequirements", None)
    alternatives = _alternatives(requirements, definitions, legacy=legacy)
    security["security"] = _td_security(alternatives, definitions)
    if requirements is not None:
        security[LEGACY_REQUIREMENTS_MEMBER if legacy else REQUIREMENTS_MEMBER] = requirements
    return security


def _alternatives(requirements: Any, definitions: dict[str, Any], *, legacy: bool) -> list[list[str]]:
    """The scheme names of each requirement (1.0: ``{"schemes": {name: scopes}}``, 0.3: ``{name: [scopes]}``),
    without repeats; ``[]`` (an empty requirement) is an alternative needing nothing. Names the card does not define
    are left out, and a requirement naming none it defines is left out whole (it never means "nothing needed")."""
    alternatives: list[list[str]] = []
    for requirement in _list(requirements):
        schemes = _required_schemes(requirement, legacy=legacy)
        if not isinstance(schemes, dict):
            continue
        names = sorted(name for name in schemes if name in definitions)
        if (names or not schemes) and names not in alternatives:
            alternatives.append(names)
    return alternatives


def _required_schemes(requirement: Any, *, legacy: bool) -> Any:
    """The ``{name: scopes}`` of a requirement: the requirement itself (0.3), or its ``schemes`` (1.0)."""
    if legacy:
        return requirement
    return requirement.get("schemes") if isinstance(requirement, dict) else None


def _td_security(alternatives: list[list[str]], definitions: dict[str, Any]) -> list[str]:
    if not alternatives:
        definitions["nosec_sc"] = {"scheme": "nosec"}
        return ["nosec_sc"]
    members = []
    for position, names in enumerate(alternatives):
        if len(alternatives) == 1 and names:
            return names  # a TD needs every scheme its security names
        if not names:
            definitions["nosec_sc"] = {"scheme": "nosec"}
            names = ["nosec_sc"]
        if len(names) == 1:
            members.append(names[0])
        else:
            definitions[f"a2a_all{position}_sc"] = {"scheme": "combo", "allOf": names}
            members.append(f"a2a_all{position}_sc")
    if len(members) == 1:
        return members
    definitions[COMBO_SCHEME] = {"scheme": "combo", "oneOf": members}
    return [COMBO_SCHEME]


# -- TD → card


def description_to_card(document: dict[str, Any]) -> dict[str, Any]:
    """The Agent Card of a description: exact for an imported card, built from the TD for any other agent."""
    kept = document.get(CARD_MEMBER)
    card: dict[str, Any] = dict(kept) if isinstance(kept, dict) else {}
    _card_basics(document, card)
    _card_link_members(document, card)
    if "supportedInterfaces" not in card and "url" not in card:
        card["supportedInterfaces"] = _interfaces(document)
    _card_security(document, card)
    if "signatures" in card and document.get(SIGNED_CONTENT_MEMBER) != content_digest(card):
        # Edited since it was signed (or never signed as it stands): its signatures no longer verify.
        del card["signatures"]
    if not isinstance(kept, dict):
        card.setdefault("capabilities", {})
        modes = _content_types(document)
        card.setdefault("defaultInputModes", modes)
        card.setdefault("defaultOutputModes", modes)
    return card


def _card_basics(document: dict[str, Any], card: dict[str, Any]) -> None:
    """Name, description, version, provider and skills of the card, each the card's own when it states one."""
    summary = summarise(document)
    card["name"] = summary.title or str(document.get("id", ""))
    if "description" not in card:
        card["description"] = summary.description or card["name"]
    if "version" not in card:
        card["version"] = summary.version or "0.0.0"
    provider = _provider(summary)
    if "provider" not in card and provider is not None:
        card["provider"] = provider
    if "skills" not in card:
        card["skills"] = _skills(document)


def _provider(summary: Summary) -> dict[str, Any] | None:
    """The card's provider: the TD's vendor, when it has both a name and a URL."""
    vendor = summary.vendor
    if vendor is None or not (vendor.name and vendor.url):
        return None
    return {"organization": vendor.name, "url": vendor.url}


def _card_link_members(document: dict[str, Any], card: dict[str, Any]) -> None:
    """``documentationUrl`` and ``iconUrl`` of the TD's links, unless the card states them."""
    for link in _list(document.get("links")):
        if not isinstance(link, dict) or not isinstance(link.get("href"), str):
            continue
        member = {"service-doc": "documentationUrl", "icon": "iconUrl"}.get(str(link.get("rel")))
        if member is not None and member not in card:
            card[member] = link["href"]


def _skills(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The skills of the TD's LMOS capabilities (top level or in ``lmos:metadata``, whatever the spelling), or of
    its actions when it lists no capability."""
    reading = lmos_normalised(document)
    _, metadata = lmos_member(reading, "metadata")
    entries = [
        entry
        for holder in (reading, metadata if isinstance(metadata, dict) else {})
        for entry in _list(lmos_member(holder, "capabilities")[1])
        if isinstance(entry, dict)
    ]
    if entries:
        return [skill for skill in map(_skill, entries) if skill is not None]
    return _action_skills(reading)


def _action_skills(document: dict[str, Any]) -> list[dict[str, Any]]:
    """A skill per action: its name, title and description."""
    actions = document.get("actions")
    return [
        {
            "id": name,
            "name": action.get("title") or name,
            "description": action.get("description") or action.get("title") or name,
            "tags": [name],
        }
        for name, action in (actions.items() if isinstance(actions, dict) else [])
        if isinstance(action, dict)
    ]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _skill(entry: dict[str, Any]) -> dict[str, Any] | None:
    """The skill of a capability (None without an id or a name): its members, its ``a2a:skill`` ones, and for a
    capability that was not a skill the required members it lacks."""
    skill = {_SKILL_KEYS[key]: value for key, value in entry.items() if key in _SKILL_KEYS}
    rest = entry.get(SKILL_MEMBER)
    if isinstance(rest, dict):
        skill.update(rest)
    if not (skill.get("id") or skill.get("name")):
        return None
    if isinstance(rest, dict) or set(skill) >= {"id", "name", "description", "tags"}:
        return skill
    return _completed_skill(skill)


def _completed_skill(skill: dict[str, Any]) -> dict[str, Any]:
    """The skill with the members A2A requires, each defaulting to its id or name."""
    skill.setdefault("id", skill.get("name"))
    skill.setdefault("name", skill["id"])
    skill.setdefault("description", skill["name"])
    skill.setdefault("tags", [skill["name"]])
    return skill


def _interfaces(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Interfaces from the A2A forms; an agent without them is reached at its actions' forms (HTTP+JSON)."""
    interfaces = [_interface(form) for form in _list(document.get("forms")) if _is_interface_form(form)]
    return interfaces or [{"url": _action_url(document), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}]


def _is_interface_form(form: Any) -> bool:
    return isinstance(form, dict) and BINDING in form and isinstance(form.get("href"), str)


def _interface(form: dict[str, Any]) -> dict[str, Any]:
    interface = {"url": form["href"], "protocolBinding": form[BINDING]}
    for key, member in ((PROTOCOL_VERSION, "protocolVersion"), (TENANT, "tenant")):
        if key in form:
            interface[member] = form[key]
    return interface


def _action_url(document: dict[str, Any]) -> str:
    """Where an agent without A2A forms is reached: its first action form's href, else its base, else its id."""
    for form in _action_forms(document):
        if isinstance(form.get("href"), str):
            return str(form["href"])
    base = document.get("base")
    return base if isinstance(base, str) else str(document.get("id", ""))


def _action_forms(document: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The forms of the TD's actions, in order."""
    actions = document.get("actions")
    for action in actions.values() if isinstance(actions, dict) else []:
        for form in action.get("forms", []) if isinstance(action, dict) else []:
            if isinstance(form, dict):
                yield form


def _card_security(document: dict[str, Any], card: dict[str, Any]) -> None:
    definitions = document.get("securityDefinitions")
    if "securitySchemes" in card or not isinstance(definitions, dict):
        return
    schemes = _a2a_schemes(definitions)
    if not schemes:
        return
    card["securitySchemes"] = schemes
    _card_requirements(document, definitions, schemes, card)


def _a2a_schemes(definitions: dict[str, Any]) -> dict[str, Any]:
    """The A2A scheme of each TD scheme: the card's own when it was imported, else converted (when A2A can
    express it)."""
    schemes = {}
    for name, scheme in definitions.items():
        if not isinstance(scheme, dict):
            continue
        a2a_scheme = scheme.get(SCHEME_MEMBER, _a2a_scheme(scheme))
        if a2a_scheme is not None:
            schemes[name] = a2a_scheme
    return schemes


def _card_requirements(
    document: dict[str, Any], definitions: dict[str, Any], schemes: dict[str, Any], card: dict[str, Any]
) -> None:
    """The card's security requirements: the imported card's own (A2A 0.3 or 1.0 shape), else those of the TD's
    security alternatives that name only schemes the card has (none when every alternative needs nothing)."""
    if document.get(LEGACY_REQUIREMENTS_MEMBER) is not None:
        card["security"] = document[LEGACY_REQUIREMENTS_MEMBER]
    elif document.get(REQUIREMENTS_MEMBER) is not None:
        card["securityRequirements"] = document[REQUIREMENTS_MEMBER]
    else:
        alternatives = [names for names in _td_alternatives(document, definitions) if set(names) <= set(schemes)]
        if any(alternatives):
            card["securityRequirements"] = [
                {"schemes": {name: {"list": []} for name in names}} for names in alternatives
            ]


def _td_alternatives(document: dict[str, Any], definitions: dict[str, Any]) -> list[list[str]]:
    """The TD's security as alternatives of scheme names that are all needed: its ``security`` needs each name;
    a ``oneOf`` combo any one of its members, an ``allOf`` combo all; ``nosec`` nothing. Cycles of combos count as
    unsatisfiable, and the expansion stops at ``MAX_REQUIREMENT_ALTERNATIVES``."""
    security = document.get("security")
    names = [security] if isinstance(security, str) else security if isinstance(security, list) else []
    return _all_of([name for name in names if isinstance(name, str)], definitions, frozenset())


def _all_of(names: list[str], definitions: dict[str, Any], seen: frozenset[str]) -> list[list[str]]:
    alternatives: list[list[str]] = [[]]
    for name in names:
        alternatives = [
            sorted({*left, *right}) for left in alternatives for right in _alternatives_of(name, definitions, seen)
        ][:MAX_REQUIREMENT_ALTERNATIVES]
    return alternatives


def _alternatives_of(name: str, definitions: dict[str, Any], seen: frozenset[str]) -> list[list[str]]:
    scheme = definitions.get(name)
    if not isinstance(scheme, dict) or name in seen:
        return []
    if scheme.get("scheme") == "nosec":
        return [[]]
    if scheme.get("scheme") != "combo":
        return [[name]]
    return _combo_alternatives(scheme, definitions, seen | {name})


def _combo_alternatives(combo: dict[str, Any], definitions: dict[str, Any], seen: frozenset[str]) -> list[list[str]]:
    """A ``oneOf`` combo's members' alternatives, one after the other; an ``allOf`` combo's, combined."""
    members = [member for member in _list(combo.get("oneOf") or combo.get("allOf")) if isinstance(member, str)]
    if "oneOf" in combo:
        found = [names for member in members for names in _alternatives_of(member, definitions, seen)]
        return found[:MAX_REQUIREMENT_ALTERNATIVES]
    return _all_of(members, definitions, seen)


def _a2a_scheme(scheme: dict[str, Any]) -> dict[str, Any] | None:
    """The A2A scheme of a TD scheme; None for schemes A2A cannot express (nosec, psk, digest, combo…)."""
    kind = scheme.get("scheme")
    convert = _A2A_SCHEMES.get(kind) if isinstance(kind, str) else None
    if convert is None:
        return None
    described = {"description": scheme["description"]} if isinstance(scheme.get("description"), str) else {}
    return convert(scheme, described)


def _http_auth_scheme(scheme: dict[str, Any], described: dict[str, Any]) -> dict[str, Any]:
    kind = scheme["scheme"]
    http = {"scheme": "Basic" if kind == "basic" else "Bearer", **described}
    if kind == "bearer" and isinstance(scheme.get("format"), str):
        http["bearerFormat"] = scheme["format"]
    return {"httpAuthSecurityScheme": http}


def _api_key_scheme(scheme: dict[str, Any], described: dict[str, Any]) -> dict[str, Any]:
    location = scheme.get("in", "header")
    return {
        "apiKeySecurityScheme": {
            "location": location if location in ("header", "query", "cookie") else "header",
            "name": scheme.get("name") or "Authorization",
            **described,
        }
    }


def _oauth2_a2a_scheme(scheme: dict[str, Any], described: dict[str, Any]) -> dict[str, Any] | None:
    """The authorization code flow of a TD ``code`` flow with an authorization URL, else client credentials; None
    without a token URL."""
    token = scheme.get("token")
    if not isinstance(token, str):
        return None
    scopes = {scope: scope for scope in _scopes(scheme.get("scopes"))}
    authorization = scheme.get("authorization")
    if scheme.get("flow") == "code" and isinstance(authorization, str):
        flow = {"authorizationCode": {"authorizationUrl": authorization, "tokenUrl": token, "scopes": scopes}}
    else:
        flow = {"clientCredentials": {"tokenUrl": token, "scopes": scopes}}
    return {"oauth2SecurityScheme": {"flows": flow, **described}}


#: The A2A scheme of each TD scheme A2A can express.
_A2A_SCHEMES: dict[str, Callable[[dict[str, Any], dict[str, Any]], dict[str, Any] | None]] = {
    "basic": _http_auth_scheme,
    "bearer": _http_auth_scheme,
    "apikey": _api_key_scheme,
    "oauth2": _oauth2_a2a_scheme,
}


def _scopes(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else [item for item in value or [] if isinstance(item, str)]


def _content_types(document: dict[str, Any]) -> list[str]:
    types: list[str] = []
    for form in _action_forms(document):
        content_type = form.get("contentType")
        if isinstance(content_type, str) and content_type not in types:
            types.append(content_type)
    return types or list(_DEFAULT_MODES)


__all__ = [
    "A2A_NAMESPACE",
    "CONTEXT",
    "CardError",
    "card_to_description",
    "description_to_card",
    "parse_card",
    "signatures_of",
]
