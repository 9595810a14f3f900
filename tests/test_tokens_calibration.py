"""TokenCalibration: the rough estimate scaled by the prompt tokens the API reported for the same requests."""

from __future__ import annotations

from ctxplug import TokenCalibration
from ctxplug.calibration import MAX_RATIO


def test_before_any_report_estimates_pass_unchanged() -> None:
    assert TokenCalibration().scale(1234) == 1234


def test_the_first_report_sets_the_ratio() -> None:
    calibration = TokenCalibration()
    assert calibration.observe(reported_prompt_tokens=13_000, estimated_tokens=10_000) == 1.3
    assert calibration.scale(20_000) == 26_000


def test_later_reports_move_the_ratio_smoothly_towards_the_new_one() -> None:
    calibration = TokenCalibration(smoothing=0.5)
    calibration.observe(12_000, 10_000)
    assert calibration.observe(8_000, 10_000) == 1.0  # halfway between 1.2 and 0.8
    for _ in range(30):
        calibration.observe(8_000, 10_000)
    assert abs(calibration.ratio - 0.8) < 1e-6
    assert calibration.observations == 32


def test_missing_usage_teaches_nothing_and_outliers_are_bounded() -> None:
    calibration = TokenCalibration()
    calibration.observe(0, 10_000)  # a response without usage
    calibration.observe(5_000, 0)
    assert calibration.observations == 0 and calibration.ratio == 1.0
    calibration.observe(1_000_000, 10)
    assert calibration.ratio == MAX_RATIO
