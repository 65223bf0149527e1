"""Results files: the contract (schema.py), the one loader (load.py), the writers (write.py), and the upgrade of
version 1 files (v1.py). docs/results-format.md describes the format."""
