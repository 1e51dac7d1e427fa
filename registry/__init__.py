"""LMOS agent and tool registry: a W3C WoT Thing Description Directory on PostgreSQL."""
