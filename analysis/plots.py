# SPDX-License-Identifier: GPL-2.0
"""The comparison's figures: one panel per series (workload and settings),
each variant against the baseline, written as PNG and SVG by save().
analysis/compare.py calls them; they read the pooled sets it loads."""
import math
import statistics

import matplotlib

matplotlib.use("Agg")  # files only, no display
matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text in SVGs
import matplotlib.pyplot as plt  # noqa: E402

from fairness import jain_index  # noqa: E402
from results import series_of  # noqa: E402
import stats  # noqa: E402

WAYS = ("fast path", "optimistic spin", "slow path, no spin", "handoff")


def by_config(points, series):
    """{threads: [points]} of one series."""
    out = {}
    for p in points:
        if series_of(p) == series:
            out.setdefault(p["threads"], []).append(p)
    return dict(sorted(out.items()))


def median_ci(values):
    """Median and a bootstrap 95% interval of it."""
    low, high = stats.bootstrap_median_ci(values)
    return statistics.median(values), low, high


def ways_of(group):
    """Share of acquisitions by way, summed over the group's points."""
    total = sum(p["total"] for p in group)
    ev = {}
    for p in group:
        for name, n in (p.get("lock_events") or {}).items():
            ev[name] = ev.get(name, 0) + n
    if not total or "mutex_slowpath" not in ev:
        return None
    slow = min(ev["mutex_slowpath"], total)
    spin = min(ev.get("mutex_opt_lock", 0), slow)
    handoff = min(ev.get("mutex_handoff", 0), slow - spin)
    return [(total - slow) / total, spin / total,
            (slow - spin - handoff) / total, handoff / total]


def series_with_sweeps(variants, workload=None):
    """Series over thread counts (all but uncontended), or those of one
    workload, in the order measured."""
    found = []
    for v in variants.values():
        for p in v["points"]:
            series = series_of(p)
            if p["workload"] != "uncontended" and series not in found \
                    and workload in (None, p["workload"]):
                found.append(series)
    return found


def panel_title(series, what, loop_ps=None):
    """A series' panel title, two lines: the series, and what is plotted
    with its loops also in ns when their cost is known."""
    title = f"{series}\n{what}"
    parts = series.split("/")
    if loop_ps and len(parts) == 4:
        c, w = (int(x[1:]) for x in parts[1:3])
        title += f" (C ~{c * loop_ps / 1000:.0f} ns, W ~{w * loop_ps / 1000:.0f} ns)"
    return title


def grid(panels, rows_per_panel=1, width=4.8, height=3.6, columns=4):
    """A figure with up to COLUMNS panels a row; each panel is
    rows_per_panel stacked axes. Returns fig and [[axes of a panel]...]."""
    cols = max(1, min(columns, panels))
    bands = max(1, math.ceil(panels / cols))
    fig, axes = plt.subplots(bands * rows_per_panel, cols, squeeze=False,
                             figsize=(max(7, width * cols),
                                      height * bands * rows_per_panel))
    out = []
    for i in range(bands * cols):
        row, col = divmod(i, cols)
        cells = [axes[row * rows_per_panel + k][col] for k in range(rows_per_panel)]
        if i < panels:
            out.append(cells)
        else:
            for ax in cells:
                ax.set_visible(False)
    return fig, out


def loop_ps_of(variants):
    """The median loop cost over the sets, ps (None if unknown)."""
    costs = [c for data in variants.values() for c in data.get("loop_ps", []) if c]
    return statistics.median(costs) if costs else None


def save(fig, out_dir, name, note):
    fig.text(0.01, 0.005, note, fontsize=7, ha="left", va="bottom")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    for ext in ("png", "svg"):
        fig.savefig(out_dir / f"{name}.{ext}", dpi=110)
    plt.close(fig)
    return f"{name}.png"


def thread_axis(ax, ticks):
    """Thread counts on the x axis, each labelled: linear up to 8, in powers
    of two beyond (1 to 256 threads of a 128-vCPU sweep stay readable)."""
    ticks = sorted(ticks)
    ax.set_xlabel("threads")
    if ticks and ticks[-1] > 8 * ticks[0]:
        ax.set_xscale("log", base=2)
    ax.set_xticks(ticks, [str(t) for t in ticks])


def plot_throughput(variants, baseline, out_dir, note):
    all_series = series_with_sweeps(variants)
    loop_ps = loop_ps_of(variants)
    fig, panels = grid(len(all_series), rows_per_panel=2)
    bands = {}
    for (ax, rel), series in zip(panels, all_series):
        base = {t: statistics.median(p["per_sec"] for p in g)
                for t, g in by_config(variants.get(baseline, {"points": []})["points"],
                                      series).items()}
        for variant, data in variants.items():
            groups = by_config(data["points"], series)
            if not groups:
                continue
            threads = list(groups)
            cis = [median_ci([p["per_sec"] for p in g]) for g in groups.values()]
            bands[(series, variant)] = dict(zip(threads, cis))
            line, = ax.plot(threads, [c[0] / 1e6 for c in cis], marker="o",
                            label=variant)
            ax.fill_between(threads, [c[1] / 1e6 for c in cis],
                            [c[2] / 1e6 for c in cis], alpha=0.2,
                            color=line.get_color())
            common = [t for t in threads if t in base]
            if common:
                rel.plot(common, [bands[(series, variant)][t][0] / base[t]
                                  for t in common], marker="o", label=variant)
        ticks = sorted({t for (s, _), b in bands.items() if s == series for t in b})
        ax.set(ylabel="M acquisitions/s")
        ax.set_title(panel_title(series, "throughput, median, 95% CI", loop_ps),
                     fontsize=8)
        rel.set(ylabel=f"/ {baseline}")
        for a in (ax, rel):
            thread_axis(a, ticks)
        rel.set_title(panel_title(series, f"/ {baseline}"), fontsize=8)
        rel.axhline(1.0, color="grey", lw=0.8)
        for a in (ax, rel):
            a.legend(fontsize=7)
    return save(fig, out_dir, "throughput", note), bands


LATENCY_STYLES = (("p50", ":"), ("p99", "-"), ("p99_9", "--"))


def plot_latency(variants, out_dir, note):
    """Per contended series: p50 dotted, p99 solid, p99.9 dashed."""
    all_series = series_with_sweeps(variants, "contended")
    fig, panels = grid(len(all_series))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for (ax,), series in zip(panels, all_series):
        for i, (variant, data) in enumerate(variants.items()):
            groups = by_config(data["points"], series)
            for name, style in LATENCY_STYLES:
                pts = [(t, statistics.median(p["latency_ns"][name] for p in g))
                       for t, g in groups.items()
                       if all(p.get("latency_ns") for p in g)]
                if pts:
                    ax.plot(*zip(*pts), marker="o", ls=style,
                            color=colors[i % len(colors)],
                            label=f"{variant} {name.replace('_', '.')}")
        # HDR sets: bucket midpoints net of the clock read; older sets: log2
        # bucket upper bounds.
        ax.set(ylabel="ns", yscale="log")
        thread_axis(ax, {t for line in ax.get_lines() for t in line.get_xdata()})
        ax.set_title(panel_title(series, "lock latency"), fontsize=8)
        ax.legend(fontsize=6)
    return save(fig, out_dir, "latency", note)


def plot_fairness(variants, out_dir, note):
    all_series = series_with_sweeps(variants)
    fig, panels = grid(len(all_series))
    for (ax,), series in zip(panels, all_series):
        for variant, data in variants.items():
            pts = []
            for t, g in by_config(data["points"], series).items():
                jains = [j for j in (jain_index(p["acquisitions"]) for p in g)
                         if j is not None]
                if jains:
                    pts.append((t, statistics.median(jains)))
            if pts:
                ax.plot(*zip(*pts), marker="o", label=variant)
        ax.set(ylim=(0, 1.05))
        thread_axis(ax, {t for line in ax.get_lines() for t in line.get_xdata()})
        ax.set_title(panel_title(series, "Jain's fairness index"), fontsize=8)
        ax.legend(fontsize=7)
    return save(fig, out_dir, "fairness", note)


def plot_ways(variants, out_dir, note):
    """Per contended series, one stacked bar per variant and thread count."""
    all_series = series_with_sweeps(variants, "contended")
    fig, panels = grid(len(all_series), width=1.0 + 0.9 * 3 * len(variants))
    for (ax,), series in zip(panels, all_series):
        labels, shares = [], []
        for variant, data in variants.items():
            for t, g in by_config(data["points"], series).items():
                w = ways_of(g)
                if w is not None:
                    labels.append(f"{variant}\n{t}t")
                    shares.append(w)
        bottom = [0.0] * len(labels)
        for i, way in enumerate(WAYS):
            heights = [s[i] for s in shares]
            ax.bar(range(len(labels)), heights, bottom=bottom, label=way)
            bottom = [b + h for b, h in zip(bottom, heights)]
        ax.set_xticks(range(len(labels)), labels, fontsize=6)
        ax.set(ylim=(0, 1.05))
        ax.set_title(panel_title(series, "how locks were acquired"), fontsize=8)
        ax.legend(fontsize=6)
    return save(fig, out_dir, "acquisition", note)
