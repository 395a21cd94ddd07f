"""The release gate: two releases' replay results compared under a policy.

```
replay result files (exporters/regressions/results.py) --evidence.py--> per-case evidence
  --sample.py (paired by case, or not)--> rules.py (policy.py) --> report.py (verdict, exit code)
```
"""
