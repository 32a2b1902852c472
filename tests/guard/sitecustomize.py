"""Python runs this at the start of every subprocess a test starts (tests/conftest.py puts this folder
on PYTHONPATH): the subprocess reports what it opens in the production catalogs/ (catalog_guard.py)."""

import catalog_guard

catalog_guard.watch_this_subprocess()
