"""Numbers from the environment: the default when unset, a clear SettingsError when unusable."""

import pytest

from services.common.settings import Settings, SettingsError, env_number
from services.gateway.config import GatewayConfig


def test_unset_or_blank_gives_the_default():
    assert env_number({}, "N", 7) == 7
    assert env_number({"N": "  "}, "N", 0.5) == 0.5


def test_the_default_decides_int_or_float():
    assert env_number({"N": "12"}, "N", 7) == 12 and isinstance(env_number({"N": "12"}, "N", 7), int)
    assert env_number({"N": "2.5"}, "N", 1.0) == 2.5


@pytest.mark.parametrize(
    "raw, default, message",
    [
        ("2.5", 7, "N='2.5' is not an integer"),
        ("abc", 1.0, "N='abc' is not a number"),
        ("0", 7, "N=0 is out of range [1, 10]"),
        ("11", 7, "N=11 is out of range [1, 10]"),
        ("nan", 1.0, "N=nan is out of range [1, 10]"),
    ],
)
def test_unusable_values_are_refused_with_the_reason(raw, default, message):
    with pytest.raises(SettingsError, match=message.replace("[", r"\[").replace("]", r"\]")):
        env_number({"N": raw}, "N", default, lo=1, hi=10)


def test_services_read_their_numbers_through_it(tmp_path):
    with pytest.raises(SettingsError, match="PLYLOG_KAFKA_PORT=70000 is out of range"):
        Settings.from_env({"PLYLOG_KAFKA_PORT": "70000"})
    with pytest.raises(SettingsError, match="PLYLOG_RATE_PER_S='fast' is not a number"):
        GatewayConfig.from_env(tmp_path, {"PLYLOG_RATE_PER_S": "fast", "PLYLOG_SECRET": "x" * 32})
