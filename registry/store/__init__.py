"""PostgreSQL: every SQL statement of the directory, run through one executor (:mod:`registry.store.database`) on the
tables of :mod:`registry.store.tables`; discovery's SQL is in :mod:`registry.store.catalog`."""
