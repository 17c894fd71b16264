"""``python -m dpaudit.report RESULT.json OUT.html``: render a saved JSON result."""

import sys

from . import _main

sys.exit(_main())
