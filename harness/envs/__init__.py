"""Environments, in one home: the spec files (spec.py: envs/*.yaml read and expanded; schema.py: their types,
keys and ${VAR} expansion), the Python a spec names (venv.py: a venv created, an overlay checked, the interpreter
probed) and the offline bundle of a Triton release (pack.py, bundle.py: `harness env pack` / `unpack`)."""
