"""What we shipped: the CycloneDX 1.6 SBOM (with the fork's pedigree) and the in-toto/SLSA
provenance statement for the wheel auditor built. The stage lives in :mod:`auditor.sbom.stage`."""
