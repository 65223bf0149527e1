"""`harness bisect`: the first Triton release at which each regressed case is slower than golden."""
