"""One run per workspace across machines: the run lock kept by the Prefect server as well as in the workspace.

The workspace lock (workspace/lock.py) is an ``flock``: the kernel frees it
when its process dies, which makes it exact on one machine, but two machines
sharing the workspace over a network filesystem may not see each other's
``flock``. With a Prefect server the workers share (``PREFECT_API_URL``), the
run also holds the single slot of a global concurrency limit named after the
workspace, under a lease it renews while it runs. The server is the one place
every worker sees: a second batch on the workspace, from any machine, queues
(``lock_wait``) or is refused with the holding flow run named.

A holder that dies stops renewing, and its lease expires after
``LEASE_SECONDS``. A run that finds the workspace's ``flock`` free and the
lease of the run before it still in the lock file knows that run is gone (the
kernel freed its lock) and releases the lease at once, so a resume after a kill
does not wait for the expiry. Killed after asking for its slot and before noting
the lease, a run leaves a slot nobody can name: the run after it waits until
that lease has lapsed (``before_this_run``).

Without ``PREFECT_API_URL`` (a run's own temporary server) there is nothing to
share: the ``flock`` alone holds.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from uuid import UUID

from workspace.lock import WorkspaceLock, WorkspaceLocked, queue_for

LEASE_SECONDS = 60.0  # a dead holder's slot is free again this long after its last renewal (renewed every third)
LAPSE_SECONDS = 20.0  # after its expiry, until the server's repossessor (every 15 s by default) has freed the slot
TAKING = "taking"  # the lock file's lease while the slot is asked for: the server may grant it before it is noted


def limit_name(workspace_root: Path) -> str:
    return f"luban-workspace-{hashlib.sha256(str(workspace_root.resolve()).encode()).hexdigest()[:16]}"


def shared_server() -> bool:
    """Whether runs talk to a server other runs (and workers) also reach, rather than a temporary one of their own."""
    return bool(os.environ.get("PREFECT_API_URL"))


@dataclass
class ServerLock:
    """The single slot of the workspace's limit, held under a lease renewed in the background until released."""

    workspace_root: Path
    flow_run_id: str | None = None
    lease_id: str | None = None
    lease_seconds: float = LEASE_SECONDS
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def name(self) -> str:
        return limit_name(self.workspace_root)

    def acquire(self, wait: float, before: dict | None = None) -> ServerLock:
        """Take the slot, queueing up to ``wait`` seconds (0: refuse at once, naming the run that holds it).

        ``before``: what the workspace lock file said about the run before this one. On this host, a free ``flock``
        proves that run gone, and its lease is released first; on another host it may live, and is named."""
        from prefect.client.orchestration import get_client
        from prefect.client.schemas.objects import ConcurrencyLeaseHolder
        from prefect.exceptions import ObjectNotFound, PrefectHTTPStatusError

        holder = ConcurrencyLeaseHolder(type="flow_run", id=UUID(self.flow_run_id)) if self.flow_run_id else None
        with get_client(sync_client=True) as client:
            try:
                client.read_global_concurrency_limit_by_name(self.name)
            except ObjectNotFound:
                client.upsert_global_concurrency_limit_by_name(self.name, 1)
            lease, asked = before_this_run(before, wait, socket.gethostname())
            if asked > wait and before:
                logging.getLogger("luban").warning(
                    "the run before this one (pid %s) was killed while taking the workspace's slot on the Prefect "
                    "server: waiting up to %.0f s for a slot it may hold to lapse", before.get("pid"), asked)
            wait = asked
            if lease is not None:
                with suppress(ObjectNotFound, PrefectHTTPStatusError):  # expired meanwhile: nothing to release
                    client.release_concurrency_slots_with_lease(UUID(lease))
            deadline = time.monotonic() + wait
            while True:
                try:
                    response = client.increment_concurrency_slots_with_lease([self.name], 1, "concurrency",
                                                                             self.lease_seconds, holder)
                    break
                except PrefectHTTPStatusError as err:
                    if err.response.status_code != 423:
                        raise
                    if time.monotonic() >= deadline:
                        raise WorkspaceLocked(self._refusal(before, wait)) from None
                    time.sleep(1.0)
        self.lease_id = str(response.json()["lease_id"])
        threading.Thread(target=self._renew, name="luban-lease", daemon=True).start()
        return self

    def release(self) -> None:
        if self.lease_id is None:
            return
        from prefect.client.orchestration import get_client
        from prefect.exceptions import ObjectNotFound, PrefectHTTPStatusError

        self._stop.set()
        lease, self.lease_id = self.lease_id, None
        with get_client(sync_client=True) as client, suppress(ObjectNotFound, PrefectHTTPStatusError):
            client.release_concurrency_slots_with_lease(UUID(lease))

    def renew(self) -> None:
        """Extend the lease by its full length (raises when the server no longer has it: released, or lapsed)."""
        from prefect.client.orchestration import get_client

        lease = self.lease_id
        if lease is None:
            raise RuntimeError(f"no lease held on '{self.name}'")
        with get_client(sync_client=True) as client:
            client.renew_concurrency_lease(UUID(lease), self.lease_seconds)

    def _renew(self) -> None:
        while not self._stop.wait(self.lease_seconds / 3) and self.lease_id is not None:
            with suppress(Exception):  # a missed renewal is tried again; three in a row and the lease lapses, as it should
                self.renew()

    def _refusal(self, before: dict | None, wait: float) -> str:
        who = (f"flow run {before.get('flow_run') or '?'}, pid {before.get('pid')} on {before.get('host')}, started "
               f"{before.get('started')}") if before and before.get("host") else "its holder wrote nothing the workspace shows"
        return (f"the workspace {self.workspace_root} is in use by another Luban run on this Prefect server ({who}; "
                f"global concurrency limit '{self.name}'); wait for it to finish, or let this run queue behind it "
                "(--wait-for-lock SECONDS)" + (f" (waited {wait:.0f} s)" if wait else ""))


def before_this_run(before: dict | None, wait: float, host: str) -> tuple[str | None, float]:
    """What is left of the run before this one on the server: the lease to release at once (on this host a free
    ``flock`` proves that run gone), and how long to wait for the slot. A run killed on this host between asking for
    its slot and noting the lease may hold a slot nobody can name: it is free once that lease lapses, so this run
    waits that long however briefly it was asked to wait (a run elsewhere may live: it is only named)."""
    if not before or before.get("host") != host or not before.get("lease"):
        return None, wait
    if before["lease"] == TAKING:
        return None, max(wait, float(before.get("lease_seconds", LEASE_SECONDS)) + LAPSE_SECONDS)
    return str(before["lease"]), wait


@contextmanager
def workspace_held(lock_file: Path, wait: float, flow_run_id: str | None) -> Iterator[WorkspaceLock]:
    """The workspace's run lock for the run's life: the ``flock``, queued for up to ``wait`` seconds, and with a
    shared server its slot there too (the lease goes into the lock file, for the run after this one)."""
    lock = queue_for(WorkspaceLock(lock_file, details={"flow_run": flow_run_id} if flow_run_id else None), wait)
    server = None
    try:
        if shared_server():
            server = ServerLock(lock_file.parent, flow_run_id)
            lock.note(lease=TAKING, lease_seconds=server.lease_seconds)  # a kill before the next note leaves this
            server.acquire(wait, lock.took_over_from)
            lock.note(lease=server.lease_id)
        yield lock
    finally:
        if server is not None:
            server.release()
        lock.release()
