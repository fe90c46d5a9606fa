"""Helpers shared by the test modules (fixtures stay in the conftest files); nothing here is a test."""
