"""Operating the directory: health checks, metrics, logs and their writer, request tracing.

Each module is a unit of its own in the import layers (tests/unit/test_layers.py): ``logs`` and ``log_writer`` sit
with the values, ``metrics`` beside the access rules, ``health`` with the use cases, ``tracing`` with HTTP.
"""
