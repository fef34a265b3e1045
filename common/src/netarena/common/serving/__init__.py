"""A2A: the green agent's server and HTTP surface, and the client to purple agents."""
