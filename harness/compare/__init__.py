"""The compare stage: golden and TOT results joined case by case and judged by the rule (rule.py, the one copy);
notes on what may be noise or not comparable (notes.py); the verdict files (store.py)."""
