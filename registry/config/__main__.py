"""``python -m registry.config``: print the configuration tables; ``--write README.md``: put them into it."""

import sys

from registry.config.readme import main

sys.exit(main(sys.argv[1:]))
