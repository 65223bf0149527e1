"""The one error type for mistakes a user can make (bad files, bad options).

Raised anywhere in library code, caught once in the CLI, printed as one line, exit code 2.
Anything else that escapes is our bug and keeps its traceback.
"""

from __future__ import annotations


class HarnessError(Exception):
    """A user-caused error; ``str(err)`` is the one line shown to the user."""

    exit_code = 2
