"""Prefect flows for Phase 0–6, the ratchet, scale-out, and the ``luban`` commands.

The layers, and the one direction imports take (tests/test_layers.py reads
every import, at the top of a module or inside a function, and fails on any
against this rule and on any cycle):

    entry files  cli.py, optimize.py, skill_flow.py, serving.py
                 (where the console script and prefect.yaml's deployments point)
      → phases/       Phase 0–6 bodies: preflight, init, rounds, held-out gate, report, resume
      → scale/        skills side by side: threads, git worktrees, child flow runs on workers
      → ratchet/      one round: the loop, the trial, measurements, Prefect tasks, records, state rebuilt from them
      → state/        the run: frozen configuration, the run object (every skill's frozen state in one
                      map), what phases produce and hand on, the ledger of samples, the lines kept edits
                      inserted, rows drafted, and what a run does and asks: effects (rows, events,
                      checkpoints, the profile) and measurements (the backend's evaluations and edits)
      → server/, interaction/   what every layer may use: the Prefect server's limits, locks and
                      heartbeats; people and terminals (checkpoints, progress, interrupts, events)

    gate/         ``luban score``, the CI gate: stands alone (no Prefect, no phase),
                  importing only interaction/terminal.py; only cli.py and route/ import it.
    route/        ``luban route``: routing across the library measured (its own flow, no phase);
                  reads skills and listings as the gate does, and asks at checkpoints.

A module imports its own package or a layer below. Why this order: a phase
decides what runs for which skills, scale-out runs a skill's rounds somewhere,
a round measures and records through the run's state, and the state knows
nothing of who drives it — so each layer can be read, and tested, without the
ones above it; the round itself runs without Prefect, given ``DirectMeasurements``
and ``DirectEffects``. A phase returns what it produced (flows/state/products.py)
and the flow puts it into the run before the next phase; a skill's work in a thread
of its own gets a copy of the run and hands back only that skill's state.

Importing this package must stay cheap: `luban score` runs in CI on every push,
so nothing here imports Prefect, openai or pandas at module level.
"""
