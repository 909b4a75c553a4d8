"""The test servers themselves: a start that times out (a loaded 2-core machine) is tried again, not failed."""

from __future__ import annotations

from urllib.request import urlopen

from tests.flows.prefect_server import prefect_server_env


def test_a_prefect_server_start_that_times_out_is_tried_again_on_a_fresh_port(tmp_path_factory):
    starts = prefect_server_env(tmp_path_factory, timeouts=(0.0, 120))  # the first wait ends before the server is up
    env = next(starts)
    try:
        assert urlopen(env["PREFECT_API_URL"] + "/health", timeout=5).status == 200
        homes = sorted(p.name for p in tmp_path_factory.getbasetemp().iterdir() if p.name.startswith("prefect-server-home"))
        assert len(homes) >= 2  # the first attempt's home, abandoned, and the one in use
    finally:
        next(starts, None)
    try:
        urlopen(env["PREFECT_API_URL"] + "/health", timeout=2)
        stopped = False
    except OSError:
        stopped = True
    assert stopped  # the server the test got is stopped at the end, like the fixture's
