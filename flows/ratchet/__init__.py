"""One round, proposal to row: the loop, the trial, measurements, Prefect tasks, records, and progress rebuilt from them."""
