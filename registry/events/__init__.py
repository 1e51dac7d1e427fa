"""Change events: the process-wide change feed and the Server-Sent Events subscribers fed from it."""
