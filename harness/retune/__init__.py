"""harness retune: remove TOT regressions by searching configs, keeping only changes that slow no case."""
