"""The workbench: many variants of one model judged on one set of contexts (sweep, ablate), one recorded value
spread over them, and what an edit changed."""
