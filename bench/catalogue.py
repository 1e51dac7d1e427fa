"""Generated catalogues, for the benchmarks (bench/suite.py) and the plan tests (tests/integration).

Two generators, one vocabulary (vendors, capabilities, a word in every description):

- ``description(index)``: a realistic LMOS Thing Description, an agent or a tool of one of ``VENDORS``, in one of
  three versions, declaring 1-3 of ``CAPABILITIES`` and 1-3 actions, with a rare word of its own (``rare_word``)
  and the word every description contains (``COMMON_WORD``). Registered through the API like any other, so every
  projection runs. Deterministic: ``description(index)`` is the same document in every run.
- ``generate(database, count)``: rows written straight into the tables in three ``INSERT … SELECT`` statements
  (descriptions, summaries, capabilities): 10⁵ rows in seconds, for query plans. Realistic in shape, not in
  content (a stub document; with ``rdf=True``, stored RDF of ``description``'s shape, for a SPARQL index).
"""

from __future__ import annotations

import random
from typing import Any

from sqlalchemy import Integer, bindparam, text

from registry.store.database import Database
from registry.store.statistics import refresh_statistics

TD11 = "https://www.w3.org/2022/wot/td/v1.1"
LMOS = "https://eclipse.dev/lmos/protocol/v1"
#: The word every generated description contains (free text for a word that matches the whole catalogue).
COMMON_WORD = "service"
VENDORS = [
    "Deutsche Telekom AG",
    "Acme Robotics",
    "Globex Corporation",
    "Initech Software",
    "Umbrella Analytics",
    "Stark Industries",
    "Wayne Enterprises",
    "Cyberdyne Systems",
    "Tyrell Corporation",
    "Soylent Labs",
    "Hooli",
    "Vandelay Industries",
]
DOMAINS = ["weather", "billing", "travel", "support", "search", "booking", "shipping", "payments", "calendar", "news"]
TASKS = ["forecast", "lookup", "planning", "summary", "translation", "escalation", "refund", "tracking"]
#: Capability names (``weather-forecast``, ``billing-refund``, …): 80 of them, ``urn:lmos:capability:<name>``.
CAPABILITIES = [f"{domain}-{task}" for domain in DOMAINS for task in TASKS]
_SYLLABLES = ["ka", "lo", "mi", "nu", "pe", "ri", "sa", "to", "vu", "ze", "bo", "da", "fe", "gi", "ju", "xo"]


def rare_word(index: int) -> str:
    """A made-up word only description ``index`` contains (free text for a word with one match)."""
    syllables = [_SYLLABLES[(index >> shift) & 15] for shift in range(0, 20, 4)]
    return "qu" + "".join(syllables)


def capability_id(name: str) -> str:
    return f"urn:lmos:capability:{name}"


def thing_id(index: int) -> str:
    kind = "tool" if index % 3 == 2 else "agent"
    return f"urn:bench:{kind}:{index:07d}"


def description(index: int, *, revision: int = 0) -> dict[str, Any]:
    """Description number ``index``; ``revision`` changes its text (a replacement that projects differently)."""
    rng = random.Random(index)
    is_tool = index % 3 == 2
    vendor = VENDORS[rng.randrange(len(VENDORS))]
    domain = DOMAINS[rng.randrange(len(DOMAINS))]
    capabilities = rng.sample([name for name in CAPABILITIES if name.startswith(domain)], 1) + rng.sample(
        CAPABILITIES, rng.randint(0, 2)
    )
    major = rng.randint(1, 3)
    slug = vendor.split()[0].lower()
    noun = "tool" if is_tool else "agent"
    title = f"{vendor.split()[0]} {domain.title()} {TASKS[index % len(TASKS)].title()} {noun.title()} {index}"
    text = f"A {domain} {noun} {COMMON_WORD} by {vendor}: {', '.join(capabilities)}. Codename {rare_word(index)}." + (
        f" Revision {revision}." if revision else ""
    )
    actions = {
        f"{name.split('-')[1]}{number}": {
            "description": f"{name.replace('-', ' ').capitalize()} for {domain} requests.",
            "safe": number == 0,
            "idempotent": number == 0,
            "input": {
                "type": "object",
                "properties": {
                    "question": {"type": "string", "description": "What the caller asks, in natural language."},
                    "locale": {"type": "string", "enum": ["en", "de", "fr"]},
                },
                "required": ["question"],
            },
            "output": {"type": "string", "description": "The answer, in natural language."},
            "forms": [
                {
                    "op": "invokeaction",
                    "href": f"https://{slug}.example/{noun}s/{index}/actions/{name}",
                    "contentType": "application/json",
                    "htv:methodName": "POST",
                }
            ],
        }
        for number, name in enumerate(capabilities)
    }
    document: dict[str, Any] = {
        "@context": [TD11, {"lmos": LMOS}],
        "id": thing_id(index),
        "@type": "lmos:Tool" if is_tool else "lmos:Agent",
        "title": title,
        "description": text,
        "version": {"instance": f"{major}.{index % 3}.0"},
        "lmos:metadata": {"lmos:vendor": {"lmos:name": vendor, "lmos:url": f"https://{slug}.example"}},
        "lmos:capabilities": [
            {"id": capability_id(name), "name": name, "version": f"{major}.{rng.randint(0, 9)}.{rng.randint(0, 9)}"}
            for name in capabilities
        ],
        "securityDefinitions": {"bearer_sc": {"scheme": "bearer", "in": "header"}},
        "security": "bearer_sc",
        "actions": actions,
    }
    if not is_tool:
        # Agents hold a lease and renew it (tools are registered once).
        document["registration"] = {"ttl": 86_400}
        document["links"] = [{"rel": "service-doc", "href": f"https://{slug}.example/{noun}s/{index}/manual"}]
    return document


#: A pseudo-random number per row (and salt), so that no attribute follows the order of ids or titles.
def _random(salt: str) -> str:
    return f"(('x' || substr(md5(n::text || '{salt}'), 1, 7))::bit(28)::int)"


_SQL_VENDORS = 25
_SQL_CAPABILITIES = 300
_DESCRIPTIONS = """
INSERT INTO descriptions (id, document_text, anonymous, created, modified, expires, ttl, last_seen, revision)
SELECT 'urn:gen:' || n, '{"id":"urn:gen:' || n || '","title":"Generated ' || n || '"}', false,
       now() - n * interval '1 second', now() - n * interval '1 second', NULL, NULL, now(), n
FROM generate_series(1, :count) AS n
"""
_SUMMARIES = f"""
INSERT INTO thing_summaries (thing_id, kind, title, title_key, vendor_name, vendor_key, version, types, summary,
                             search, capability_keys)
SELECT 'urn:gen:' || n, CASE WHEN {_random("kind")} % 3 = 0 THEN 'tool' ELSE 'agent' END,
       initcap(topic) || ' ' || md5(n::text), topic || ' ' || md5(n::text),
       'Vendor ' || {_random("vendor")} % {_SQL_VENDORS}, 'vendor ' || {_random("vendor")} % {_SQL_VENDORS},
       '1.' || n % 3 || '.0',
       ARRAY['Thing', CASE WHEN {_random("kind")} % 3 = 0 THEN 'lmos:Tool' ELSE 'lmos:Agent' END], '{{}}'::jsonb,
       setweight(to_tsvector('english', topic), 'A')
       || setweight(to_tsvector('english', 'A {COMMON_WORD} answering questions about topic'
                    || {_random("topic")} % 500 || ' and ' || topic), 'B'),
       ARRAY(SELECT key FROM thing_capabilities AS offered,
                    LATERAL (VALUES (0, 'id:' || capability_id), (1, 'name:' || name_key)) AS entry (kind, key)
             WHERE offered.thing_id = 'urn:gen:' || n ORDER BY position, kind)
FROM generate_series(1, :count) AS n,
     LATERAL (SELECT (ARRAY['weather','billing','travel','support','search','booking'])[1 + {_random("title")} % 6]
              AS topic) AS t
"""
_CAPABILITIES = f"""
INSERT INTO thing_capabilities (thing_id, position, source, capability_id, name, name_key, version, vendor_name)
SELECT 'urn:gen:' || n, k, 'lmos', 'urn:capability:' || c, 'capability' || c, 'capability' || c,
       (1 + k) || '.' || n % 3 || '.0', 'Vendor ' || {_random("vendor")} % {_SQL_VENDORS}
FROM generate_series(1, :count) AS n, generate_series(0, 2) AS k,
     LATERAL (SELECT ({_random("capability")} + k * 101) % {_SQL_CAPABILITIES} AS c) AS picked
"""


#: PostgreSQL reports a session's row counts when it next goes idle, and at most once a second: this makes it the
#: end of the current transaction.
FLUSH_STATISTICS = text("SELECT pg_stat_force_next_flush()")


#: The stored RDF of a generated row: ``description(4)``'s (an agent with three capabilities, 80 statements), its
#: id, blank node labels, kind, title, vendor and capabilities those of the row (``rdf_template``).
_RDF = f"""
INSERT INTO description_rdf (thing_id, revision, ntriples, unknown_contexts)
SELECT summary.thing_id, n,
       replace(replace(replace(replace(replace(replace(replace(replace(replace(
           :template, '@ID@', summary.thing_id), '@LABEL@', 'g' || n || 'n'),
           '@KIND@', CASE summary.kind WHEN 'tool' THEN 'Tool' ELSE 'Agent' END), '@TITLE@', summary.title),
           '@VENDOR@', summary.vendor_name),
           '@CAPABILITY0@', 'capability' || ({_random("capability")}) % {_SQL_CAPABILITIES}),
           '@CAPABILITY1@', 'capability' || ({_random("capability")} + 101) % {_SQL_CAPABILITIES}),
           '@CAPABILITY2@', 'capability' || ({_random("capability")} + 202) % {_SQL_CAPABILITIES}),
           '@VERSION@', '.' || n % 3 || '.0'),
       '[]'::jsonb
FROM generate_series(1, :count) AS n
JOIN thing_summaries AS summary ON summary.thing_id = 'urn:gen:' || n
"""


def rdf_template() -> str:
    """N-Triples of ``description(4)`` with placeholders for what differs between generated rows (``_RDF``)."""
    from registry.semantic.loader import ContextLibrary
    from registry.semantic.rdf import RdfConverter

    document = description(4)
    ntriples = RdfConverter(ContextLibrary.load(None)).convert(document).ntriples
    label = ntriples.split("_:", 1)[1].split("n", 1)[0]
    ntriples = ntriples.replace(f"_:{label}n", "_:@LABEL@").replace(document["id"], "@ID@")
    ntriples = ntriples.replace("#Agent>", "#@KIND@>").replace(f'"{document["title"]}"', '"@TITLE@"')
    vendor = document["lmos:metadata"]["lmos:vendor"]["lmos:name"]
    ntriples = ntriples.replace(f'"{vendor}"', '"@VENDOR@"')
    for position, capability in enumerate(document["lmos:capabilities"]):
        ntriples = ntriples.replace(f'"{capability["id"]}"', f'"urn:capability:@CAPABILITY{position}@"')
        ntriples = ntriples.replace(f'"{capability["name"]}"', f'"@CAPABILITY{position}@"')
        ntriples = ntriples.replace(f'"{capability["version"]}"', f'"{1 + position}@VERSION@"')
    return ntriples


async def generate(database: Database, count: int, *, rdf: bool = False) -> None:
    """``count`` rows ``urn:gen:1…`` (25 vendors, 300 capabilities, three each, in three versions) with their
    summaries and capabilities (and with ``rdf``, their stored RDF), then fresh statistics (as after an import)."""
    async with database.transaction() as tx:
        for statement in (_DESCRIPTIONS, _CAPABILITIES, _SUMMARIES):  # summaries list capabilities
            await tx.execute(text(statement).bindparams(bindparam("count", type_=Integer)), count=count)
        if rdf:
            statement = text(_RDF).bindparams(bindparam("count", type_=Integer))
            await tx.execute(statement, count=count, template=rdf_template())
        await tx.execute(FLUSH_STATISTICS)  # the rows written are counted before the ANALYZE, not after it
    await refresh_statistics(database)
