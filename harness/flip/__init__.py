"""`harness flip`: which single compiler knob brings a regressed case back within the rule."""
