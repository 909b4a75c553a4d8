"""Stop a child `luban` at a named step: SIGKILL it, or hold it until a file exists. Imported by the child first.

``LUBAN_KILL_AT=qualname:event:nth:needle`` kills the process the n-th time a
function with that qualified name is entered (``call``) or returns (``return``),
counting only calls where one of its arguments names ``needle`` when given.
``LUBAN_HOLD_AT=qualname:event`` with ``LUBAN_HOLD_FILE=F`` holds the calling
thread there until F exists, and says so by creating ``F.held``.

Why not ``sys.setprofile``: a Python callback on every call of every function
slowed each child by about 65 % (3 CPU-seconds of a 4.5 s batch), and the suite
runs dozens of them. Instead, as each Luban module is imported, the matching
functions get their code replaced by a call through this hook — the function
object stays the same, so every reference to it (a `from … import`, a Prefect
task's ``fn``, a bound method) reaches the hook. No test-only code in Luban.
"""

from __future__ import annotations

import importlib.abc
import os
import signal
import sys
import threading
import time
import types
from collections.abc import Callable
from typing import Any

PACKAGES = ("flows", "judges", "workspace", "scoring")
GLOBAL_NAME = "__luban_step_hook__"  # the one name added to a patched function's module globals


class StepHook:
    def __init__(self, qualname: str, event: str, nth: int, needle: str, act: Callable[[], None]) -> None:
        self.qualname, self.event, self.nth, self.needle, self.act = qualname, event, nth, needle, act
        self.originals: dict[int, types.FunctionType] = {}
        self.seen = 0
        self.lock = threading.Lock()

    def __call__(self, key: int, args: tuple, kwargs: dict) -> Any:
        if self.event == "call":
            self._reached(args, kwargs)
        result = self.originals[key](*args, **kwargs)
        if self.event == "return":
            self._reached(args, kwargs)
        return result

    def _reached(self, args: tuple, kwargs: dict) -> None:
        if self.needle and not any(self.needle in str(v) for v in (*args, *kwargs.values())):
            return
        with self.lock:
            self.seen += 1
            now = self.seen == self.nth
        if now:
            self.act()

    def patch_module(self, module: types.ModuleType) -> None:
        """Route every function of ``module`` (module level or a class's) with the hook's qualname through it."""
        for value in list(vars(module).values()):
            if getattr(value, "__module__", None) != module.__name__:
                continue
            candidates = vars(value).values() if isinstance(value, type) else (value,)
            for candidate in candidates:
                candidate = getattr(candidate, "__func__", candidate)  # a classmethod's or staticmethod's function
                if isinstance(candidate, types.FunctionType) and candidate.__qualname__ == self.qualname:
                    self._patch(candidate)

    def _patch(self, function: types.FunctionType) -> None:
        if function.__closure__ or function.__code__.co_flags & (0x20 | 0x80 | 0x200):  # generators, coroutines
            raise RuntimeError(f"step_hook cannot stop at {function.__qualname__}: a closure or a generator")
        key = len(self.originals)
        original = types.FunctionType(function.__code__, function.__globals__, function.__name__,
                                      function.__defaults__, function.__closure__)
        original.__kwdefaults__ = function.__kwdefaults__
        self.originals[key] = original
        source = f"def {function.__name__}(*args, **kwargs):\n    return {GLOBAL_NAME}({key}, args, kwargs)\n"
        namespace: dict[str, Any] = {}
        exec(compile(source, function.__code__.co_filename, "exec"), namespace)  # our own two lines, nothing read in
        function.__globals__[GLOBAL_NAME] = self
        function.__code__ = namespace[function.__name__].__code__.replace(co_qualname=function.__qualname__)


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Patches each Luban module right after it is executed, before anything can call into it."""

    def __init__(self, hook: StepHook) -> None:
        self.hook = hook

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name.split(".")[0] not in PACKAGES:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            execute = spec.loader.exec_module

            def exec_module(module: types.ModuleType) -> None:
                execute(module)
                self.hook.patch_module(module)

            spec.loader.exec_module = exec_module  # type: ignore[method-assign]  # one loader per module file
        return spec


def _kill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _hold(gate: str) -> Callable[[], None]:
    def hold() -> None:
        open(gate + ".held", "w").close()
        while not os.path.exists(gate):
            time.sleep(0.1)
    return hold


def install() -> None:
    if os.environ.get("LUBAN_KILL_AT"):
        qualname, event, nth, needle = os.environ["LUBAN_KILL_AT"].split(":", 3)
        hook = StepHook(qualname, event, int(nth), needle, _kill)
    elif os.environ.get("LUBAN_HOLD_AT"):
        qualname, event = os.environ["LUBAN_HOLD_AT"].split(":")
        hook = StepHook(qualname, event, 1, "", _hold(os.environ["LUBAN_HOLD_FILE"]))
    else:
        return
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] in PACKAGES:
            hook.patch_module(module)
    sys.meta_path.insert(0, _PatchOnImport(hook))


install()
