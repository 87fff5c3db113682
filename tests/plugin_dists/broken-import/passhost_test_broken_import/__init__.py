"""passhost-test-broken-import: a test distribution of tests/test_plugin_installs.py.

Importing this package creates the file named after it in ``$PASSHOST_TEST_MARKER_DIR``
(when that variable is set), so a test can prove whether the host imported the plugin.
"""

import os
import pathlib

if os.environ.get("PASSHOST_TEST_MARKER_DIR"):
    pathlib.Path(os.environ["PASSHOST_TEST_MARKER_DIR"], __name__).touch()
