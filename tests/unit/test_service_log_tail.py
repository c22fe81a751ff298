"""Given a service's log, when a test reports it, then the first traceback comes with the tail."""

from pathlib import Path

from bench.procs import Service


def service_with_log(tmp_path: Path, lines: list[str]) -> Service:
    service = Service("rules-1", "services.rules", (), {}, tmp_path)
    service.logs.append(tmp_path / "rules-1.1.log")
    service.log.write_text("\n".join(lines) + "\n")
    return service


def test_a_crash_far_up_the_log_is_reported_before_the_tail(tmp_path):
    noise = [f"shutdown line {n}" for n in range(100)]
    crash = ["[ERROR] Committing raised exception", "Traceback (most recent call last):", "  File x", "KeyError: 3"]
    report = service_with_log(tmp_path, ["start", *crash, *noise]).tail(lines=10).splitlines()
    assert report[:4] == crash
    assert report[-10:] == noise[-10:]
    assert "[...]" in report


def test_a_log_without_a_traceback_far_up_is_just_its_tail(tmp_path):
    lines = [f"line {n}" for n in range(50)]
    assert service_with_log(tmp_path, lines).tail(lines=5).splitlines() == lines[-5:]
    late = [*lines, "Traceback (most recent call last):", "ValueError"]
    assert service_with_log(tmp_path, late).tail(lines=5).splitlines() == late[-5:]
