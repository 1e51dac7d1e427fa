"""SPARQL from an external SPARQL 1.1 store (Apache Jena Fuseki, Oxigraph server, QLever, GraphDB…) instead of the
local index, so that any number of stateless replicas run on one PostgreSQL (``REGISTRY_SPARQL_STORE_*``).

One replica at a time (the holder of a PostgreSQL advisory lock) pushes the stored RDF to the store
(:mod:`registry.sparql.store.pusher`), following the change feed like the local index's follower; every replica
answers ``/search/sparql`` by forwarding the screened query to the store (:mod:`registry.sparql.store.endpoint`),
after the store has caught up with the change log. :mod:`registry.sparql.store.store` is the HTTP side: SPARQL
Update for changes and the position, the Graph Store Protocol for bulk loads, the SPARQL Protocol for queries.
"""
