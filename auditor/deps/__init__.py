"""deps: dependency extraction and diff, typosquats, and vulnerabilities (issue 5)."""
