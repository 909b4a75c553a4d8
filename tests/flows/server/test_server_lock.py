"""The workspace's run lock on a shared Prefect server (the test harness): one holder across machines, a queue or a
refusal that names the holder, a gone holder's lease released at once on its own host, and a lease kept alive."""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from pathlib import Path

import pytest

from flows.server.lock import LAPSE_SECONDS, LEASE_SECONDS, TAKING, ServerLock, before_this_run, limit_name, workspace_held
from workspace.lock import WorkspaceLocked

pytestmark = pytest.mark.usefixtures("prefect_api")
ELSEWHERE = {"host": "worker-7.example", "pid": 4242, "started": "2026-12-04T09:00:00+00:00", "flow_run": "batch-run-1"}


def test_a_second_run_is_refused_naming_the_first_or_queues_until_it_is_done(tmp_path: Path):
    first = ServerLock(tmp_path, str(uuid.uuid4())).acquire(0)
    try:
        with pytest.raises(WorkspaceLocked) as refused:
            ServerLock(tmp_path, str(uuid.uuid4())).acquire(0, before=ELSEWHERE | {"lease": first.lease_id})
        message = str(refused.value)
        assert "flow run batch-run-1, pid 4242 on worker-7.example" in message and limit_name(tmp_path) in message
        assert "--wait-for-lock" in message
        threading.Timer(1.5, first.release).start()
        started = time.monotonic()
        queued = ServerLock(tmp_path, str(uuid.uuid4())).acquire(30, before=ELSEWHERE)  # another host: never released
        assert time.monotonic() - started >= 1.0  # it waited for the first to finish
        queued.release()
    finally:
        first.release()


def test_the_lease_of_a_run_gone_from_this_host_is_released_at_once(tmp_path: Path):
    """A free flock on this host proves its holder dead (the kernel freed it): its lease need not run out first."""
    dead = ServerLock(tmp_path, str(uuid.uuid4())).acquire(0)
    dead._stop.set()  # a killed process renews nothing
    gone = {"host": socket.gethostname(), "pid": 1, "started": "then", "lease": dead.lease_id}
    with pytest.raises(WorkspaceLocked):  # the same lease, held by a run on another host, is not taken from it
        ServerLock(tmp_path, str(uuid.uuid4())).acquire(0, before=gone | {"host": "worker-7.example"})
    taker = ServerLock(tmp_path, str(uuid.uuid4())).acquire(0, before=gone)
    taker.release()


def test_a_held_lease_is_renewed_on_the_server_and_a_released_one_is_not(tmp_path: Path):
    """The server keeps a lease at least 60 s, so its lapse is not waited for here: what is tested is that a renewal
    reaches the server for this very lease (a released one is refused), and that a released lock is free again."""
    held = ServerLock(tmp_path, str(uuid.uuid4())).acquire(0)
    lease = held.lease_id
    held.renew()
    held.release()
    with pytest.raises(Exception, match="404|410|Not Found|not found"):  # noqa: RUF043 - alternatives, on purpose
        ServerLock(tmp_path, lease_id=lease).renew()
    ServerLock(tmp_path, str(uuid.uuid4())).acquire(0).release()


def test_what_is_left_of_the_run_before_depends_on_where_it_ran_and_how_far_it_got():
    here = {"host": "vm", "pid": 11, "started": "then"}
    assert before_this_run(None, 0, "vm") == (None, 0)
    assert before_this_run(here, 5, "vm") == (None, 5)  # it never asked for a slot
    assert before_this_run(here | {"lease": "3f0c"}, 0, "vm") == ("3f0c", 0)  # gone from this host: released at once
    assert before_this_run(here | {"lease": "3f0c"}, 0, "worker-7") == (None, 0)  # elsewhere it may live: named
    # killed between asking for its slot and noting the lease: whatever it was granted lapses with the lease
    assert before_this_run(here | {"lease": TAKING, "lease_seconds": 60}, 0, "vm") == (None, 60 + LAPSE_SECONDS)
    assert before_this_run(here | {"lease": TAKING}, 600, "vm") == (None, 600)  # asked to wait longer already
    assert before_this_run(here | {"lease": TAKING}, 0, "worker-7") == (None, 0)


def test_the_lock_file_says_a_slot_is_being_taken_before_the_server_is_asked(tmp_path: Path, monkeypatch):
    """The order that makes a kill at any instant recoverable: TAKING is in the lock file before the slot is asked
    for, the lease after it was granted."""
    seen = []
    real = ServerLock.acquire

    def acquire(self, wait, before=None):
        seen.append(json.loads((tmp_path / "ws" / ".luban.lock").read_text())["lease"])
        return real(self, wait, before)

    from prefect.settings import PREFECT_API_URL

    monkeypatch.setenv("PREFECT_API_URL", str(PREFECT_API_URL.value()))  # a shared server: the slot is taken there
    monkeypatch.setattr(ServerLock, "acquire", acquire)  # the real one, looked at first
    with workspace_held(tmp_path / "ws" / ".luban.lock", 0, str(uuid.uuid4())):
        held = json.loads((tmp_path / "ws" / ".luban.lock").read_text())
    assert seen == [TAKING] and held["lease"] not in (TAKING, None) and held["lease_seconds"] == LEASE_SECONDS
