"""Signed attestations, offline: local keys (:mod:`.keys`), DSSE envelopes (:mod:`.dsse`), the
SLSA verification summary of an audit (:mod:`.vsa`), what an audit signs (:mod:`.sign`) and
``auditor attest verify`` (:mod:`.verify`).

Each signed document is an in-toto Statement v1 in a DSSE envelope, one envelope per
``*.intoto.jsonl`` file (one line): the format ``cosign verify-blob-attestation --key`` reads.
"""
