"""chainops toolkit."""
