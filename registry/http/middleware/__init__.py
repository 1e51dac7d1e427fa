"""What wraps the routes: ASGI middleware and the request boundary, before a controller sees a request.

The input boundary, forwarded headers and client addresses, the sites the directory answers to, the access log,
ids in paths, HEAD and OPTIONS for every route, cached reads answered before routing, and the hardened HTTP/1.1
protocol of ``registry serve``.
"""
