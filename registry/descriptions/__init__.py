"""The pure domain of descriptions, without a web framework or SQL: vocabulary (:mod:`~registry.descriptions.model`),
validation, registration information and the Enriched TD, summaries, versions, ids, lint, tool formats, the product
gazetteer, and compatibility between versions (:mod:`registry.descriptions.compatibility`)."""
