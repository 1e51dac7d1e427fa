"""The Things use cases of the WoT Discovery directory: register, replace, patch, delete, read, leases, expiry;
and its search API, SPARQL and JSONPath (:mod:`registry.directory.search`)."""
