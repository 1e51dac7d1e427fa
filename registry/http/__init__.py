"""The HTTP layer: thin Litestar controllers, the access guard (:mod:`registry.http.access`), dependency injection
(:mod:`registry.http.dependencies`), request bodies, problem details, the OpenAPI contract, and the middleware that
wraps the routes (:mod:`registry.http.middleware`). ``registry/app.py`` assembles them."""
