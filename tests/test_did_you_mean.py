"""An unknown key one slip from a real one names the real one; a key like no field names none."""

import pytest

from platform_testbed.sim.cli.parser import main


@pytest.mark.parametrize(
    ("key", "said"),
    [
        ("platfrom.event_log_cap", "platfrom: unknown field (did you mean platform?)"),
        ("platform.event_log_cp", "platform.event_log_cp: unknown field (did you mean event_log_cap?)"),
        ("check.look_dealy_s", "check.look_dealy_s: unknown field (did you mean look_delay_s?)"),
        ("platform.zzz", "platform.zzz: unknown field\n"),
    ],
)
def test_an_unknown_key_suggests_the_nearest_field_of_its_table(key, said, capsys):
    """--set with a misspelt key: exit 2, one line, with the nearest field where one is near."""
    assert main(["compare", "sept25-crash-loop", "--set", f"{key}=3"]) == 2
    err = capsys.readouterr().err
    assert said in err
    assert len(err.strip().splitlines()) == 1
