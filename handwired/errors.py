"""The one exception type for mistakes a user can fix.

Everything the user supplies (a weight file, a context, an option) is checked
where it is read; a problem becomes a ``HandwiredError`` whose message is one
line saying where, what was expected and what was found. The CLI prints that
line to stderr and exits with code 2; nothing else should ever reach the user
as a traceback.
"""


class HandwiredError(Exception):
    """A problem with the user's input, phrased for the user."""
