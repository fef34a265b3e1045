"""Red-team regression tests: each attack on an untrusted-input boundary must be refused."""
