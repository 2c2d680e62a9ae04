"""Real servers and stand-ins that tests start on 127.0.0.1 (see each module). The pieces the scripts and the bench
share with them live in ``scripts/_support`` (which never imports the tests): ``scripts/`` is put on the path here, once."""

import sys
from pathlib import Path

_SCRIPTS = str(Path(__file__).resolve().parents[2] / "scripts")
if _SCRIPTS not in sys.path:
    sys.path.insert(0, _SCRIPTS)
