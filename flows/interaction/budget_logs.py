"""A budget stop as what it is: the end a run was given (said once, in its result and report), not an ERROR from
every Prefect task run the stop cut short (``Finished in state Failed('… BudgetExhausted …')``).

Prefect logs a task run that raised at ERROR, whatever it raised. The records whose exception is Luban's
``BudgetExhausted`` are lowered to INFO: a person sees them with ``luban -v`` and in the Prefect UI, and a CI log or a
cron mail is not told of a failure that did not happen.
"""

from __future__ import annotations

import logging

from judges.usage import BudgetExhausted

_LOGGERS = ("prefect.task_runs", "prefect.flow_runs")


class BudgetStopsAreNotErrors(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR and _budget_stop(record):
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


def _budget_stop(record: logging.LogRecord) -> bool:
    raised = record.exc_info[1] if record.exc_info else None
    return isinstance(raised, BudgetExhausted) or BudgetExhausted.__name__ in record.getMessage()


_FILTER = BudgetStopsAreNotErrors()


def quiet_budget_stops() -> None:
    """Install the filter on Prefect's run loggers (once: the same filter object is never added twice)."""
    for name in _LOGGERS:
        logging.getLogger(name).addFilter(_FILTER)
