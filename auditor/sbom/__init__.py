"""What we shipped: the CycloneDX 1.6 SBOM (with the fork's pedigree) and the in-toto/SLSA
provenance statement for the wheel auditor built. The stage lives in :mod:`auditor.sbom.stage`."""

from auditor.sbom.iri_syntax import install as _install_iri_syntax

# before anything here imports jsonschema: see auditor/sbom/iri_syntax.py (saves ~1.5 s per run)
_install_iri_syntax()
