"""sbom."""
