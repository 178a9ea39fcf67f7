"""Memory model: real planner figures, the 64->32-bit tail correction, arena search."""

from __future__ import annotations

import pytest

from mcunas.boards.catalog import load_board
from mcunas.cost.memory import STRUCT_BYTES, estimate_memory
from mcunas.tflite.reader import read_graph
from mcunas.tflite.runtime import create_interpreter, parse_allocations
from tests.repo import REPO

MODELS = REPO / "mcunas" / "calibration" / "models"

SAMPLE = """\
[RecordingMicroAllocator] Arena allocation total 3984 bytes
[RecordingMicroAllocator] Arena allocation head 768 bytes
[RecordingMicroAllocator] Arena allocation tail 3216 bytes
[RecordingMicroAllocator] 'TfLiteEvalTensor data' used 744 bytes with alignment overhead \
(requested 744 bytes for 31 allocations)
[RecordingMicroAllocator] 'NodeAndRegistration struct' used 640 bytes with alignment \
overhead (requested 640 bytes for 10 NodeAndRegistration structs)
"""


def test_parse_allocations() -> None:
    report = parse_allocations(SAMPLE)
    assert (report.total_bytes, report.head_bytes, report.tail_bytes) == (3984, 768, 3216)
    assert report.kinds["TfLiteEvalTensor data"].count == 31
    assert report.kinds["NodeAndRegistration struct"].used_bytes == 640
    with pytest.raises(ValueError):
        parse_allocations("nothing here")


def _load(name: str) -> bytes:
    return (MODELS / f"{name}.tflite").read_bytes()


@pytest.mark.parametrize(
    ("name", "host_total", "head"),
    [("kws_ref_model", 24272, 16000), ("person_detect_int8", 85264, 55296)],
)
def test_arena_from_the_real_planner(name: str, host_total: int, head: int) -> None:
    data = _load(name)
    board = load_board("esp32")  # ESP-NN's generic kernels: no scratch buffers
    mem = estimate_memory(data, read_graph(data), board)
    assert mem.host_arena_bytes == host_total
    assert mem.arena_head_bytes == head and mem.scratch_bytes == 0
    # The 32-bit tail is smaller than the host tail, by at least the node structs.
    host_tail = host_total - head
    assert mem.arena_tail_bytes < host_tail
    nodes = len(read_graph(data).ops)
    assert host_tail - mem.arena_tail_bytes >= nodes * 32
    assert mem.peak_sram_bytes == (
        mem.arena_bytes + board.firmware_ram_bytes + board.firmware_stack_bytes
    )
    assert mem.flash_bytes == len(data) + mem.kernel_code_bytes + board.firmware_flash_bytes
    assert {"arena_bytes", "peak_sram_bytes", "flash_bytes"} <= set(mem.methods)


def test_struct_table_matches_host_sizes() -> None:
    # The 64-bit sizes in the table must be what the host allocator records.
    data = _load("vww_96_int8")
    interp, _ = create_interpreter(data, 1 << 20)
    from mcunas.tflite.runtime import arena_report

    kinds = arena_report(interp).kinds
    for kind, (host_size, _mcu, per_struct) in STRUCT_BYTES.items():
        if per_struct == 1:
            assert kinds[kind].requested_bytes == kinds[kind].count * host_size, kind


def test_smallest_arena_search_finds_planner_headroom() -> None:
    # ad01's planner needs more room while allocating than its final total.
    data = _load("ad01_int8")
    mem = estimate_memory(data, read_graph(data), load_board("nucleo_f746zg"))
    smallest = mem.host_arena_bytes + mem.planner_headroom_bytes
    assert mem.planner_headroom_bytes > 0
    assert create_interpreter(data, smallest)[0] is not None
    assert create_interpreter(data, smallest - 16)[0] is None


def test_cmsis_nn_adds_scratch_and_kernels_change_flash() -> None:
    data = _load("kws_ref_model")
    graph = read_graph(data)
    board = load_board("nucleo_f746zg")
    cmsis = estimate_memory(data, graph, board, kernels="cmsis-nn")
    ref = estimate_memory(data, graph, board, kernels="reference")
    assert cmsis.scratch_bytes == 2 * 10 * 4 * 1 * 2  # first conv: 10x4 over 1 channel
    assert ref.scratch_bytes == 0
    assert cmsis.kernel_code_bytes > ref.kernel_code_bytes


def test_unrunnable_model_gets_a_static_estimate() -> None:
    from tests.tflite.test_audit import gelu_model

    data = gelu_model()
    mem = estimate_memory(data, read_graph(data), load_board("esp32"))
    assert mem.runtime_error is not None and "GELU" in mem.runtime_error
    assert mem.arena_head_bytes >= 8 + 4  # input and FC output alive together
    assert "static estimate" in mem.methods["arena_bytes"]


def test_person_detection_matches_espressifs_arena() -> None:
    # espressif/esp-tflite-micro examples/person_detection sizes its arena at 81 KiB
    # (+ an ESP-NN scratch allowance on the ESP32-S3 only).
    data = _load("person_detect_int8")
    graph = read_graph(data)
    plain = estimate_memory(data, graph, load_board("esp32"))
    assert plain.scratch_bytes == 0
    assert 80 * 1024 <= plain.arena_bytes <= 81 * 1024
    s3 = estimate_memory(data, graph, load_board("esp32s3"))
    # Largest request: the last 1x1 conv (256 -> 256 channels), ESP32-S3 fast path:
    # filter copy 256*256 + transpose buffer 2*8*256 + 32 alignment.
    assert s3.scratch_bytes == 256 * 256 + 2 * 8 * 256 + 32
    assert s3.arena_bytes == plain.arena_bytes + s3.scratch_bytes


def test_native_crash_in_runtime_becomes_a_reason(monkeypatch):
    """A runtime that aborts while planning must not kill the caller."""
    import os

    from mcunas.boards.catalog import load_board
    from mcunas.cost import memory
    from mcunas.tflite.runtime import NativeCrash, run_forked

    with pytest.raises(NativeCrash, match="SIGABRT"):
        run_forked(os.abort)
    model = (MODELS / "ad01_int8.tflite").read_bytes()
    monkeypatch.setattr(memory, "create_interpreter", lambda *a: os.abort())  # in the child
    est = memory.estimate_memory(model, read_graph(model), load_board("esp32s3"))
    assert est.runtime_error and "crashed (SIGABRT" in est.runtime_error
    assert est.arena_bytes > 0  # falls back to the static estimate


def test_crash_while_probing_small_arenas_counts_as_too_small(monkeypatch):
    """The host runtime has segfaulted at arenas right at the reported total."""
    import os

    from mcunas.cost import memory

    model = (MODELS / "kws_ref_model.tflite").read_bytes()
    board = load_board("esp32s3")
    good = memory.estimate_memory(model, read_graph(model), board)
    real = memory.create_interpreter

    def crash_below_a_mib(model_bytes: bytes, size: int):  # noqa: ANN202
        # the first report is made at 1 MiB or more; the probes near the total crash
        return real(model_bytes, size) if size >= 1 << 20 else os.abort()

    monkeypatch.setattr(memory, "create_interpreter", crash_below_a_mib)
    est = memory.estimate_memory(model, read_graph(model), board)
    assert est.runtime_error is None  # the report from the large arena is kept
    assert est.arena_bytes >= good.arena_bytes


class _SlowReport:
    """An interpreter whose report lets other threads run first (as native code may)."""

    def __init__(self, interp) -> None:
        self._interp = interp

    def print_allocations(self) -> None:
        import time

        time.sleep(0.001)
        self._interp.print_allocations()


def test_arena_reports_from_several_threads_each_get_their_own_text() -> None:
    # A rack measures its boards from threads; fd 2 is one per process.
    from concurrent.futures import ThreadPoolExecutor

    from mcunas.tflite.runtime import arena_report

    names = ("kws_ref_model", "ad01_int8")
    interps = [_SlowReport(create_interpreter(_load(n), 1 << 20)[0]) for n in names]
    expected = [arena_report(i).total_bytes for i in interps]

    def reports(k: int) -> list[int]:
        return [arena_report(interps[k]).total_bytes for _ in range(50)]

    with ThreadPoolExecutor(2) as pool:
        got = list(pool.map(reports, [0, 1]))
    assert got == [[expected[0]] * 50, [expected[1]] * 50]


def _fd_lock_is_free() -> bool:
    from mcunas.tflite import runtime

    return runtime.FD_LOCK.acquire(timeout=5)


def test_forked_child_does_not_inherit_another_threads_fd_lock() -> None:
    import threading

    from mcunas.tflite import runtime

    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        with runtime.FD_LOCK:
            held.set()
            done.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(30)
        assert runtime.run_forked(_fd_lock_is_free)  # it would wait forever for a lost thread
    finally:
        done.set()
        holder.join()
