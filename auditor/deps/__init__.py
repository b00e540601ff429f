"""deps."""
