"""Agents in containers: ``netarena up`` (Docker SDK) and compose files."""
