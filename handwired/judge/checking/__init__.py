"""A model judged on a set of contexts: which contexts, paired with which rule, run how (the walk, a sample, or proof
by cases), and the report."""
