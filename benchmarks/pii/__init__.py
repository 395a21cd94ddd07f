"""A labelled PII corpus, generated from a seed: short texts and support conversations carrying
every class of personal data turnwatch must replace, in text, tool arguments and tool results,
plus near misses that must stay (see benchmarks/pii/README.md)."""
