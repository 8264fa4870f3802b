"""The comparison's figures: spreads, the paired gap, the table and the JSON document."""

from __future__ import annotations

import shutil
import statistics
import subprocess
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from platform_testbed.sim.rollout.real.variants import DEFAULT_FACTOR, DeployFigures, Variant


@dataclass(frozen=True, slots=True)
class Spread:
    """Mean, standard deviation, min, max and count of one figure."""

    mean: float
    sd: float
    lo: int
    hi: int
    n: int

    @classmethod
    def of(cls, values: Sequence[int]) -> Spread:
        """The spread of a list of counts (sd 0 for fewer than two)."""
        if not values:
            return cls(0.0, 0.0, 0, 0, 0)
        sd = statistics.stdev(values) if len(values) > 1 else 0.0
        return cls(statistics.fmean(values), sd, min(values), max(values), len(values))

    def text(self) -> str:
        """``mean ± sd (min–max, n)``."""
        return f"{self.mean:.2f} ± {self.sd:.2f} ({self.lo}–{self.hi}, n={self.n})"

    def json(self) -> dict[str, float | int]:
        """JSON-ready."""
        return {"mean": round(self.mean, 3), "sd": round(self.sd, 3), "min": self.lo,
                "max": self.hi, "n": self.n}


@dataclass
class Comparison:
    """One variant: the real deploys and the model's, side by side."""

    variant: Variant
    factor: float
    real: list[DeployFigures]
    model: list[DeployFigures]
    model_unscaled_lost: list[int]
    first_seed: int = 0

    def spread(self, side: str, figure: str) -> Spread:
        """The spread of ``figure`` over the ``real`` or ``model`` deploys."""
        runs = self.real if side == "real" else self.model
        return Spread.of([getattr(r, figure) for r in runs])

    def gap(self) -> tuple[float, float]:
        """Real minus model losses over the paired seeds (same seed, same start times): the
        mean difference and its standard error."""
        diffs = [r.lost - m.lost for r, m in zip(self.real, self.model, strict=False)]
        if not diffs:
            return 0.0, 0.0
        se = statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else 0.0
        return statistics.fmean(diffs), se

    def paired_model(self) -> Spread:
        """The model's losses over the seeds the real deploys ran (0..n-1)."""
        return Spread.of([m.lost for m in self.model[: len(self.real)]])

    def codes(self) -> dict[str, int]:
        """HAProxy's loss codes summed over the real deploys."""
        total: Counter[str] = Counter()
        for r in self.real:
            total.update(r.detail.get("lost_by_code", {}))
        return dict(sorted(total.items()))

    def json(self) -> dict[str, Any]:
        """JSON-ready, with every deploy's figures."""
        diff, se = self.gap()
        return {
            "name": self.variant.name,
            "scenario": self.variant.scenario,
            "sets": list(self.variant.sets),
            "note": self.variant.note,
            "factor": self.factor,
            "first_seed": self.first_seed,
            "real": {f: self.spread("real", f).json() for f in ("lost", "health_503", "served")},
            "model": {f: self.spread("model", f).json() for f in ("lost", "health_503", "served")},
            "model_unscaled_lost_mean": round(statistics.fmean(self.model_unscaled_lost), 3)
            if self.model_unscaled_lost else None,
            "model_paired_lost": self.paired_model().json(),
            "gap": {"real_minus_model_paired": round(diff, 3), "se": round(se, 3)},
            "real_lost_by_code": self.codes(),
            "real_deploys": [
                {"lost": r.lost, "health_503": r.health_503, "served": r.served,
                 "requests": r.requests, **r.detail}
                for r in self.real
            ],
        }



def table(rows: Sequence[Comparison]) -> str:
    """The comparison as a Markdown table (the README shows it)."""
    return table_of([r.json() for r in rows], haproxy_version())


def _spread_text(s: dict[str, Any]) -> str:
    return f"{s['mean']:.2f} ± {s['sd']:.2f} ({s['min']}–{s['max']}, n={s['n']})"


def table_of(configurations: Sequence[dict[str, Any]], version: str = "?") -> str:
    """The table from the JSON document's ``configurations`` (``--from-json`` re-renders one)."""
    factor = configurations[0]["factor"] if configurations else DEFAULT_FACTOR
    first = configurations[0].get("first_seed", 0) if configurations else 0
    n = configurations[0]["real"]["lost"]["n"] if configurations else 0
    head = [
        f"timings scaled by 1/{factor:g} (rps x{factor:g}); real: HAProxy {version}, "
        f"deploys of seeds {first}–{first + n - 1}; model: `testbed rollout` at the same scaled "
        "timings; paired: the same seeds (same start times)",
        "",
        "| configuration | lost per deploy, real (mean ± sd, min–max, n) "
        "| 502 per deploy, model | model, paired seeds | real − model, paired (± se) "
        "| health 503s, real / model | served, real / model | real losses by HAProxy code |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    body = []
    for c in configurations:
        real, model = c["real"], c["model"]
        codes = ", ".join(f"{k}: {v}" for k, v in c["real_lost_by_code"].items()) or "-"
        body.append(
            f"| {c['name']} | {_spread_text(real['lost'])} | {_spread_text(model['lost'])} "
            f"| {c['model_paired_lost']['mean']:.2f} "
            f"| {c['gap']['real_minus_model_paired']:+.2f} (± {c['gap']['se']:.2f}) "
            f"| {real['health_503']['mean']:.1f} / {model['health_503']['mean']:.1f} "
            f"| {real['served']['mean']:.0f} / {model['served']['mean']:.0f} | {codes} |"
        )
    return "\n".join(head + body)


def haproxy_version() -> str:
    """``2.6.12`` or ``?``."""
    binary = shutil.which("haproxy") or "/usr/sbin/haproxy"
    try:
        out = subprocess.run([binary, "-v"], capture_output=True, text=True, timeout=10,
                             check=False).stdout
    except OSError:
        return "?"
    words = out.split()
    return words[2].split("-")[0] if len(words) > 2 else "?"
