"""py-spy's dump text parsed into threads and frames, innermost first."""

from __future__ import annotations

from test_pyspy_samples import DUMP, NATIVE_DUMP, OLD_HEX_DUMP

from slurmkit.pyspy.stack import Dump, Frame, Thread, parse_dump


def test_real_dump_threads_and_frames() -> None:
    dump = parse_dump(DUMP)
    assert dump.pid == 14340
    assert dump.command == "/root/.pyenv/versions/3.11.7/bin/python3 prog.py"
    assert (dump.python_version, dump.python_path) == (
        "3.11.7",
        "/root/.pyenv/versions/3.11.7/bin/python3.11",
    )
    assert [(t.thread_id, t.name, t.state) for t in dump.threads] == [
        ("14340", "MainThread", "idle"),
        ("14398", "heartbeat", "idle"),
        ("14399", "spinner", "active+gil"),
    ]
    main = dump.main_thread
    assert main is not None and main.idle
    assert main.frames[0] == Frame("allreduce", "prog.py", 13)  # innermost first
    assert main.frames[-1] == Frame("<module>", "prog.py", 24)
    assert [f.function for f in dump.threads[1].frames][:3] == [
        "Condition.wait",
        "Event.wait",
        "idle_worker",
    ]
    assert not dump.threads[2].idle


def test_native_frames_have_no_line_and_addresses_are_masked() -> None:
    dump = parse_dump(NATIVE_DUMP)
    frames = dump.threads[0].frames
    assert frames[0] == Frame("clock_nanosleep", "libc.so.6", None)
    assert frames[2] == Frame("allreduce", "prog.py", 13)
    address = frames[-1]
    assert address.is_address and not frames[0].is_address
    assert address.key() == ("?", "libc.so.6", None)
    assert str(address) == "0x7f2d3ce4524a (libc.so.6)"
    assert len(dump.threads[1].frames) == 13


def test_older_hex_thread_ids_and_nameless_threads() -> None:
    dump = parse_dump(OLD_HEX_DUMP)
    assert [(t.thread_id, t.name) for t in dump.threads] == [
        ("0x7F5B1C3FE740", "MainThread"),
        ("0x7F5A9BFFF700", ""),
    ]
    assert dump.main_thread is not None
    assert dump.main_thread.frames[0] == Frame(
        "broadcast", "torch/distributed/distributed_c10d.py", 1191
    )


def test_main_thread_falls_back_to_the_pid_then_the_first() -> None:
    by_pid = Dump(pid=7, threads=(Thread("9", "worker"), Thread("7", "renamed")))
    assert by_pid.main_thread is not None and by_pid.main_thread.thread_id == "7"
    first = Dump(pid=1, threads=(Thread("9", "a"), Thread("8", "b")))
    assert first.main_thread is not None and first.main_thread.thread_id == "9"
    assert Dump().main_thread is None


def test_noise_and_empty_text() -> None:
    assert parse_dump("").threads == ()
    assert parse_dump("Error: something\n  not a frame\n").threads == ()
    text = 'Thread 5 (idle): "MainThread"\n    f (a.py:1)\n        Arguments:\n    g (b.py:2)\n'
    (thread,) = parse_dump(text).threads
    assert [f.function for f in thread.frames] == ["f", "g"]


def test_function_names_with_spaces_and_parentheses() -> None:
    text = 'Thread 5 (idle): "MainThread"\n    foo(int) const (libx.so)\n    <lambda> (a b.py:3)\n'
    (thread,) = parse_dump(text).threads
    assert thread.frames == (Frame("foo(int) const", "libx.so"), Frame("<lambda>", "a b.py", 3))
