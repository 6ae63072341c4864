"""Real ``py-spy dump`` output (py-spy 0.4.3, CPython 3.11), shared by the pyspy tests.

Captured from a small program: MainThread sleeping in ``allreduce``, an idle
``heartbeat`` thread waiting on an Event, a ``spinner`` thread holding the GIL.
The older hex-thread-id form is how py-spy 0.3.x printed thread ids.
"""

from __future__ import annotations

DUMP = """\
Process 14340: /root/.pyenv/versions/3.11.7/bin/python3 prog.py
Python v3.11.7 (/root/.pyenv/versions/3.11.7/bin/python3.11)

Thread 14340 (idle): "MainThread"
    allreduce (prog.py:13)
    train_step (prog.py:16)
    main (prog.py:21)
    <module> (prog.py:24)
Thread 14398 (idle): "heartbeat"
    Condition.wait (threading.py:327)
    Event.wait (threading.py:629)
    idle_worker (prog.py:5)
    Thread.run (threading.py:982)
    Thread._bootstrap_inner (threading.py:1045)
    Thread._bootstrap (threading.py:1002)
Thread 14399 (active+gil): "spinner"
    busy (prog.py:10)
    Thread.run (threading.py:982)
    Thread._bootstrap_inner (threading.py:1045)
    Thread._bootstrap (threading.py:1002)
"""

NATIVE_DUMP = """\
Process 14340: /root/.pyenv/versions/3.11.7/bin/python3 prog.py
Python v3.11.7 (/root/.pyenv/versions/3.11.7/bin/python3.11)

Thread 14340 (idle): "MainThread"
    clock_nanosleep (libc.so.6)
    time_sleep (libpython3.11.so.1.0)
    allreduce (prog.py:13)
    train_step (prog.py:16)
    main (prog.py:21)
    <module> (prog.py:24)
    0x7f2d3ce4524a (libc.so.6)
Thread 14398 (idle): "heartbeat"
    0x7f2d3cea3f16 (libc.so.6)
    0x7f2d3ceaed90 (libc.so.6)
    PyThread_acquire_lock_timed (libpython3.11.so.1.0)
    lock_PyThread_acquire_lock (libpython3.11.so.1.0)
    Condition.wait (threading.py:327)
    Event.wait (threading.py:629)
    idle_worker (prog.py:5)
    Thread.run (threading.py:982)
    Thread._bootstrap_inner (threading.py:1045)
    Thread._bootstrap (threading.py:1002)
    thread_run (libpython3.11.so.1.0)
    0x7f2d3cea71f5 (libc.so.6)
    0x7f2d3cf278ec (libc.so.6)
Thread 14399 (active+gil): "spinner"
    busy (prog.py:10)
    Thread.run (threading.py:982)
    Thread._bootstrap_inner (threading.py:1045)
    Thread._bootstrap (threading.py:1002)
    thread_run (libpython3.11.so.1.0)
    0x7f2d3cea71f5 (libc.so.6)
    0x7f2d3cf278ec (libc.so.6)
"""

OLD_HEX_DUMP = """\
Process 835995: python pretrain_gpt.py --tensor-model-parallel-size 4
Python v3.8.10 (/usr/bin/python3.8)

Thread 0x7F5B1C3FE740 (idle): "MainThread"
    broadcast (torch/distributed/distributed_c10d.py:1191)
    _aggregate_total_loss (deepspeed/runtime/pipe/engine.py:540)
    train_batch (deepspeed/runtime/pipe/engine.py:330)
    <module> (pretrain_gpt.py:239)
Thread 0x7F5A9BFFF700 (idle)
    wait (threading.py:306)
"""

# stderr of py-spy 0.4.3 on failures, as captured.
STDERR_PTRACE_DENIED = (
    "Permission Denied: Try running again with elevated permissions by going "
    "'sudo env \"PATH=$PATH\" !!'\n"
)
STDERR_GONE = """\
Error: Failed to get process executable name. Check that the process is running.

Caused by:
    0: No such file or directory (os error 2)
    1: No such file or directory (os error 2)

Stack backtrace:
   0: <E as anyhow::context::ext::StdError>::ext_context
   1: py_spy::python_process_info::PythonProcessInfo::new
"""
STDERR_NOT_PYTHON = """\
Error: Failed to find python version from target process

Stack backtrace:
   0: anyhow::error::<impl anyhow::Error>::msg
   1: py_spy::python_process_info::get_python_version
"""
