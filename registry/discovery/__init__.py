"""Discovery: search, facets, summaries, versions, capability resolution, compatibility and tool formats; a need in
plain words (:mod:`registry.discovery.needs`) and its calls (:mod:`registry.discovery.find`); what operators
oversee (:mod:`registry.discovery.oversight`)."""
