"""The other conventions as views over the stored Thing Descriptions: A2A Agent Cards
(:mod:`registry.conventions.a2a`), MCP ``server.json`` entries (:mod:`registry.conventions.mcp`) and their use cases
(:mod:`registry.conventions.service`)."""
