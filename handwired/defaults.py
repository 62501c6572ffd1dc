"""Every default handwired's core and its command line share, once, in a module that imports nothing.

The core's functions take these as their default arguments and the command
line shows them as its options' defaults, so the two can never disagree.
"""

DEFAULT_MODEL = "aab"  # the bundled model a command reads when no weight file is given
NEAR_MISS = 1.0  # logits: a margin below this means a small edit could flip an answer
FAILURES_SHOWN = 10  # failing contexts a check lists, shortest first; the counts cover all of them
CHANGES_SHOWN = 20  # contexts diff lists whose answer or margin changed
DIFF_SAMPLE = 100_000  # random contexts diff compares when there are too many to compare all
SEED = 0  # for every random sample
COMPLETE_TOKENS = 10  # tokens complete appends
ATTENTION_SCORE = "scaled-dot"  # attend's score function
STREAM_MIN_LENGTH = 2  # a stream check judges prefixes from this length (one token says nothing of a pattern)
MIN_LENGTH = 1  # an exhaustive or sampled check judges contexts from this length


def stream_length(pattern: str) -> int:
    """The published test's length: ten repeats of the pattern, less one (27 tokens for aab)."""
    return 10 * len(pattern) - 1
