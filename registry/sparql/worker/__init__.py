"""SPARQL in a child process of ``registry serve`` (one per data directory, shared by its ``--workers``), so that a
query can be stopped and a crash is contained.

oxigraph cannot interrupt a query inside one evaluation step (an aggregate over a huge join runs to its end), and
a bug in native code would take the whole server down. So the index and the query threads live in a worker
process (:mod:`registry.sparql.worker.__main__`) that talks msgpack frames over its stdin/stdout
(:mod:`registry.sparql.worker.client` is the server's side). When a query outlives its timeout (or its memory,
``REGISTRY_SPARQL_MEMORY_LIMIT``) the worker is killed and started again; its index is on disk
(:mod:`registry.sparql.worker.index`), so the new worker takes it up where it left off instead of rebuilding it.
Until the index has caught up with the change log, queries are answered 503 with Retry-After, while the rest of
the API answers from the start; the server process itself never blocks on a query.
"""
