import threading
import time

import pytest

from mcunas.boards.catalog import load_board
from mcunas.errors import CandidateError, FatalError, MeasurementError
from mcunas.figures import Figures
from mcunas.measure.base import get_measurer
from mcunas.measure.rack import RackError, RackMeasurer, load_rack, probe_rack
from mcunas.testing.virtual_board.flasher import VirtualProject
from tests.vboard_helpers import MODEL, OTHER_MODEL, virtual_board

ESP = load_board("esp32s3")


def write_rack(tmp_path, *entries, head=""):
    body = head + "".join(f'[[board]]\nprofile = "{p}"\nport = "{port}"\n' for p, port in entries)
    path = tmp_path / "rack.toml"
    path.write_text(body)
    return path


def test_load_rack(tmp_path):
    rack = load_rack(
        write_rack(
            tmp_path, ("esp32s3", "/dev/a"), ("rp2040", "/dev/b"), head="[rack]\nmax_failures = 2\n"
        )
    )
    assert [b.name for b in rack.boards] == ["esp32s3@/dev/a", "rp2040@/dev/b"]
    assert rack.max_failures == 2 and len(rack.for_profile("rp2040")) == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "rack file not found"),
        ("[[board", "is not valid TOML"),
        ("[rack]\n", "no \\[\\[board\\]\\] entries"),
        ('[[board]]\nprofile = "esp32s3"\n', "board 1: 'port' is missing"),
        ('[[board]]\nprofile = "nope"\nport = "/dev/a"\n', "board 1: Unknown board 'nope'"),
        ('[[board]]\nprofile = "esp32s3"\nport = "auto"\n', "not 'auto'"),
        ('[[board]]\nprofile = "esp32s3"\nport = "/dev/a"\n' * 2, "port listed more than once"),
        ('[[board]]\nprofile = "esp32s3"\nprot = "/dev/a"\n', "board 1: unknown key 'prot'"),
        (
            '[[board]]\nprofile = "esp32s3"\nport = "/dev/a"\nkernels = "reference"\n',
            "board 1: unknown key 'kernels'",
        ),
        (
            '[rack]\nmax_failure = 1\n[[board]]\nprofile = "esp32s3"\nport = "/dev/a"\n',
            "\\[rack\\] unknown key 'max_failure'",
        ),
        (
            '[rack]\nmax_failures = true\n[[board]]\nprofile = "esp32s3"\nport = "/dev/a"\n',
            "max_failures must be a positive integer",
        ),
        ('[[boards]]\nprofile = "esp32s3"\nport = "/dev/a"\n', "no \\[\\[board\\]\\] entries"),
    ],
)
def test_load_rack_errors(tmp_path, text, message):
    path = tmp_path / "rack.toml"
    if text is not None:
        path.write_text(text)
    with pytest.raises(RackError, match=message):
        load_rack(path)


def fake_measurement(name, model):
    return Figures(f"board:{name}", False, 1.0, 10, 20, 30, details={"model": model})


class Scripted:
    """A measurer whose behaviour per board is a function of the model."""

    def __init__(self, name, behaviour, delay=0.0):
        self.name, self.behaviour, self.delay = name, behaviour, delay
        self.seen = []

    def measure(self, model, frontend=None):
        self.seen.append(model)
        time.sleep(self.delay)
        outcome = self.behaviour(model)
        if isinstance(outcome, Exception):
            raise outcome
        return fake_measurement(self.name, model)

    def test_connection(self):
        pass


def make_rack(tmp_path, behaviours, **kw):
    ports = [("esp32s3", f"/dev/fake{i}") for i in range(len(behaviours))]
    rack = load_rack(write_rack(tmp_path, *ports))
    measurers = {}

    def factory(rb):
        i = int(rb.port[-1])
        measurers[rb.name] = Scripted(rb.name, behaviours[i], kw.pop("delay", 0.0))
        return measurers[rb.name]

    return RackMeasurer(ESP, rack, measurer_factory=factory, **kw), measurers


def ok(model):
    return None


def test_parallel_one_worker_per_board(tmp_path):
    threads = set()
    all_busy = threading.Barrier(3, timeout=30)  # passes only if three boards measure at once

    def record(model):
        name = threading.current_thread().name
        if name not in threads:
            threads.add(name)
            all_busy.wait()

    rm, measurers = make_rack(tmp_path, [record] * 3, delay=0.05)
    with rm:
        outcomes = rm.measure_many([bytes([i]) for i in range(9)])
    assert [o.index for o in outcomes] == list(range(9)) and all(o.ok for o in outcomes)
    assert [o.measurement.details["model"] for o in outcomes] == [bytes([i]) for i in range(9)]
    assert len(threads) == 3 and sum(len(m.seen) for m in measurers.values()) == 9
    assert all(s.measured >= 1 for s in rm.status())


def test_failing_board_is_retired_and_candidates_retried(tmp_path):
    broken = MeasurementError("never printed 'ready'")
    bad_calls, bad_took_two = [], threading.Event()  # two failures retire it (max_failures)

    def bad(model):
        bad_calls.append(model)
        if len(bad_calls) == 2:
            bad_took_two.set()
        return broken

    def good_after_bad_took_two(model):  # else the good board may take all six first
        bad_took_two.wait(timeout=30)

    rm, measurers = make_rack(tmp_path, [bad, good_after_bad_took_two], max_failures=2)
    with rm:
        outcomes = rm.measure_many([bytes([i]) for i in range(6)])
    assert all(o.ok for o in outcomes)  # every candidate ended on the good board
    bad, good = rm.status()
    assert bad.out_reason.startswith("2 failures in a row") and "ready" in bad.out_reason
    assert good.out_reason is None and good.measured == 6
    retried = [o for o in outcomes if o.attempts]
    assert retried and all("esp32s3@/dev/fake0" in o.attempts[0] for o in retried)
    assert retried[0].measurement.details["failed_attempts"] == list(retried[0].attempts)


def test_candidate_failing_everywhere_is_recorded_with_reason(tmp_path):
    def flaky(model):
        return MeasurementError("crashed") if model == b"bad" else None

    rm, _ = make_rack(tmp_path, [flaky, flaky], max_failures=3)
    with rm:
        good, bad = rm.measure_many([b"good", b"bad"])
    assert good.ok and not bad.ok
    assert "failed on 2 board(s)" in bad.error and bad.error.count("crashed") == 2
    assert all(s.out_reason is None for s in rm.status())


def test_candidate_error_is_not_retried_nor_counted(tmp_path):
    def rejects(model):
        return CandidateError("arena_too_small")

    rm, measurers = make_rack(tmp_path, [rejects, rejects], max_failures=1)
    with rm:
        (outcome,) = rm.measure_many([b"m"])
    assert outcome.error == "arena_too_small" and outcome.attempts == ()
    assert sum(len(m.seen) for m in measurers.values()) == 1
    assert all(s.out_reason is None for s in rm.status())


def test_all_boards_out_is_fatal(tmp_path):
    dead = MeasurementError("port vanished")
    rm, _ = make_rack(tmp_path, [lambda m: dead, lambda m: dead], max_failures=1)
    with rm:
        with pytest.raises(FatalError, match="out"):
            rm.measure_many([b"a", b"b"])
        with pytest.raises(FatalError, match="out of rotation"):
            rm.measure(b"c")


def test_fatal_error_stops_the_rack(tmp_path):
    rm, _ = make_rack(tmp_path, [lambda m: FatalError("pio not found")])
    with rm, pytest.raises(FatalError, match="pio not found"):
        rm.measure(b"a")


def test_rack_needs_a_board_of_the_profile(tmp_path):
    rack = load_rack(write_rack(tmp_path, ("rp2040", "/dev/x")))
    with pytest.raises(FatalError, match="has no esp32s3 board \\(it has: rp2040\\)"):
        RackMeasurer(ESP, rack)


def test_registered_and_virtual_rack_end_to_end(tmp_path):
    assert get_measurer("rack") is RackMeasurer
    with (
        virtual_board(model=None) as a,
        virtual_board(model=None) as b,
        virtual_board("silence") as c,
    ):
        path = write_rack(tmp_path, *[("esp32s3", vb.port) for vb in (a, b, c)])
        rack = RackMeasurer(
            ESP,
            path,
            timeout_s=0.5,
            project_factory=VirtualProject,
            work_dir=tmp_path / "build",
            max_failures=1,
        )
        with rack:
            outcomes = rack.measure_many([MODEL, OTHER_MODEL] * 3)
        assert all(o.ok for o in outcomes)
        assert {o.measurement.source for o in outcomes} <= {
            f"virtual-board:{a.port}",
            f"virtual-board:{b.port}",
        }
        silent = [s for s in rack.status() if s.port == c.port][0]
        assert "never printed 'ready'" in silent.out_reason
        probed = {rb.port: (ready, err) for rb, ready, err in probe_rack(load_rack(path), 0.3)}
        assert probed[a.port][0].board == "esp32s3" and probed[c.port][1]


def test_relative_profile_path_is_beside_the_rack_file(tmp_path, monkeypatch):
    (tmp_path / "lab").mkdir()
    (tmp_path / "lab" / "myb.toml").write_text(
        'name = "myb"\ncore = "cortex-m33"\nclock_hz = 150_000_000\nsram_bytes = 262144\n'
        'flash_bytes = 1048576\nkernels = "cmsis-nn"\n'
    )
    rack = tmp_path / "lab" / "rack.toml"
    rack.write_text('[[board]]\nprofile = "myb.toml"\nport = "/dev/a"\n')
    monkeypatch.chdir(tmp_path)
    assert load_rack(rack).boards[0].profile.name == "myb"
