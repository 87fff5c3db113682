"""The processor features of a ``cmsis-nn`` target: ``has_dsp`` and ``has_mve``.

CMSIS-NN picks its kernels, and so the scratch buffers they need, by the processor it is
built for: plain C, the DSP extension (Cortex-M4, M7, M33, M35P) or the M-profile vector
extension MVE / Helium (Cortex-M52, M55, M85, which have the DSP extension too). The target
options ``-mcpu`` and ``-mattr`` give the processor: ``-mattr=+nomve`` removes MVE and
``-mattr=+nodsp`` removes both (MVE needs the DSP extension); the same flags may also follow
the CPU name (``-mcpu=cortex-m55+nomve``). No ``-mcpu`` means a processor without either.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from passhost.errors import OptionError, close_matches

__all__ = ["CPUS", "Features", "features_of", "target_features"]


class Features(NamedTuple):
    """Which CMSIS-NN build the target needs: ``has_dsp`` (DSP extension) and ``has_mve``
    (Helium, which implies the DSP extension)."""

    has_dsp: bool
    has_mve: bool


_PLAIN = Features(False, False)
_DSP = Features(True, False)
_MVE = Features(True, True)

#: The Cortex-M processors ``-mcpu`` accepts and their features.
CPUS: dict[str, Features] = {
    "cortex-m0": _PLAIN, "cortex-m0plus": _PLAIN, "cortex-m1": _PLAIN, "cortex-m3": _PLAIN,
    "cortex-m23": _PLAIN,
    "cortex-m4": _DSP, "cortex-m7": _DSP, "cortex-m33": _DSP, "cortex-m35p": _DSP,
    "cortex-m52": _MVE, "cortex-m55": _MVE, "cortex-m85": _MVE,
}

_FLAGS = ("+nomve", "+nodsp")


def _flags(words: Iterable[str], where: str) -> set[str]:
    """The feature flags among ``words`` (each may join several with ``+``)."""
    found = set()
    for word in words:
        for part in word.replace(",", "+").split("+"):
            part = part.strip()
            if not part:
                continue
            flag = f"+{part}"
            if flag not in _FLAGS:
                raise OptionError(f"target kind 'cmsis-nn': {where} holds the unknown feature "
                                  f"flag {flag!r}; the flags are {', '.join(_FLAGS)}")
            found.add(flag)
    return found


def target_features(mcpu: str = "", mattr: Iterable[str] = ()) -> Features:
    """The features of processor ``mcpu`` (optionally followed by ``+nomve``/``+nodsp``)
    with the flags of ``mattr`` applied; an unknown processor or flag raises OptionError."""
    cpu, _, cpu_flags = mcpu.strip().partition("+")
    cpu = cpu.strip().lower()
    if cpu and cpu not in CPUS:
        hint = close_matches(cpu, CPUS, limit=1)
        mean = f" (did you mean {hint[0]!r}?)" if hint else ""
        raise OptionError(f"target kind 'cmsis-nn': unknown -mcpu {mcpu!r}{mean}; the "
                          f"processors are {', '.join(CPUS)}")
    flags = _flags([cpu_flags] if cpu_flags else [], "-mcpu") | _flags(mattr, "-mattr")
    has_dsp, has_mve = CPUS.get(cpu, _PLAIN)
    if "+nodsp" in flags:
        return _PLAIN
    return Features(has_dsp, has_mve and "+nomve" not in flags)


def features_of(target: Any) -> Features:
    """The features of a ``cmsis-nn`` Target (from its ``mcpu`` and ``mattr`` options)."""
    return target_features(target.options["mcpu"], target.options["mattr"])
