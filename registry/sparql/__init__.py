"""SPARQL: one query interface (:mod:`registry.sparql.query`: screening, the engine, :class:`SparqlBackend`) and its
two backends, the local index in a child process (:mod:`registry.sparql.worker`) and an external SPARQL 1.1 store
(:mod:`registry.sparql.store`).

Each part is a unit of its own in the import layers (tests/unit/test_layers.py): ``query`` sits with the values,
the two backends with the use cases.
"""
