"""Discovery: search, facets, summaries, versions, capability resolution, compatibility and tool formats."""
