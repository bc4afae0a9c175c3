"""The shared profile helper: unknown profiles refused, defaults resolved, explicit values win."""

import pytest

from resnet_theory.profiles import check_profile, resolve_profile


def test_defaults_follow_the_profile_and_given_values_win():
    cfg = resolve_profile("quick", depth=(None, 8, 64), seeds=(3, 10, 20))
    assert (cfg.depth, cfg.seeds, cfg.quick, cfg.profile) == (8, 3, True, "quick")
    cfg = resolve_profile("full", depth=(None, 8, 64))
    assert (cfg.depth, cfg.quick) == (64, False)
    assert resolve_profile("quick", flag=(False, True, True)).flag is False  # a falsy value still wins


@pytest.mark.parametrize("bad", ["Quick", "fast", "", "full "])
def test_unknown_profiles_are_refused_not_run_as_full(bad):
    with pytest.raises(ValueError, match="unknown profile"):
        check_profile(bad)
    with pytest.raises(ValueError, match="unknown profile"):
        resolve_profile(bad, depth=(None, 1, 2))


def test_wrong_types():
    with pytest.raises(TypeError, match="profile must be a string"):
        check_profile(None)
    with pytest.raises(TypeError, match="knob 'depth'"):
        resolve_profile("quick", depth=(None, 1))
