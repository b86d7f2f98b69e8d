"""Helpers shared by tests that talk to the real control plane."""
