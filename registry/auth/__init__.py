"""Authentication (API keys, access tokens), ownership of ids and namespaces, rate limits: docs/security.md."""
