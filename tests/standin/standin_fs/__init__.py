"""A stand-in filesystem registered from the tests alone (tests/test_standin.py): its "cluster" is
a directory it makes in its own state, served as a POSIX mount. It stands in for a filesystem's
package only to show that adding one is this package plus a registration line."""

DEFAULT_RUNTIME = "standin"
SAMPLES: dict[str, dict] = {"": {}}
