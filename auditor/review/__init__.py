"""Human review the tool can count: review packets, sign-offs and coverage.

:mod:`~auditor.review.hunks` reads the series' hunks with content ids, :mod:`~auditor.review.areas`
groups them by the engine profile's review areas, :mod:`~auditor.review.plan` splits them across
reviewers, :mod:`~auditor.review.packets` writes the packets, :mod:`~auditor.review.signoffs` reads
and appends the reviews file, :mod:`~auditor.review.coverage` counts what is signed off, and
:mod:`~auditor.review.stage` brings it into the audit (and :mod:`~auditor.review.carry` the gate).
"""
