"""The route app's frr modules."""
