"""Environments beyond a spec file: the offline bundle of a Triton release (pack, unpack)."""
