"""passhost-timing: ``PassTimingInstrument`` and its pass profiles."""

from passhost_timing.instrument import NOTHING_PROFILED, PassTimingInstrument
from passhost_timing.profile import (
    SCHEMA_VERSION,
    PassProfile,
    profile_to_chrome_trace,
    profile_to_dict,
    profile_to_json,
    render_profiles,
    walk,
)

__all__ = [
    "NOTHING_PROFILED", "SCHEMA_VERSION", "PassProfile", "PassTimingInstrument",
    "profile_to_chrome_trace", "profile_to_dict", "profile_to_json", "render_profiles", "walk",
]
