"""Adapters: the ports' implementations for what lasts (SQL storage) and what is live (the room logs)."""
