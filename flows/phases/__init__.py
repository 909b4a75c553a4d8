"""Phase 0–6 bodies: preflight, init, rounds, the held-out gate, the report, resume."""
