# SPDX-License-Identifier: GPL-2.0
"""The comparison's figures: one panel per series (workload and settings),
each variant against the baseline, written as PNG and SVG by save().
analysis/compare.py calls them. Throughput and latency show one estimate
per boot (make regress's) summarized over the boots, with the boots'
95% interval, and the ratio panels the boot-by-boot rows of the report;
nothing is pooled across boots."""
import math
import statistics

import matplotlib

matplotlib.use("Agg")  # files only, no display
matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text in SVGs
# The same data give the same files: a remade reference differs only where
# its figures do (no random ids, no creation date).
matplotlib.rcParams["svg.hashsalt"] = "mutexlab"
import matplotlib.pyplot as plt  # noqa: E402

from matplotlib.lines import Line2D  # noqa: E402

from fairness import jain_index  # noqa: E402
import estimates  # noqa: E402
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
    """A series' panel title, two lines: the series, with its loops also
    in ns when their cost is known, and what is plotted."""
    head = series
    parts = series.split("/")
    if loop_ps and len(parts) == 4:
        c, w = (int(x[1:]) for x in parts[1:3])
        head += f" (C ~{c * loop_ps / 1000:.0f} ns, W ~{w * loop_ps / 1000:.0f} ns)"
    return f"{head}\n{what}"


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


def save(fig, out_dir, name, note, title, legend_room=0.0):
    """Write the figure as PNG and SVG with its title and the machine's
    note; legend_room is the share of the width kept on the right for a
    figure legend outside the panels."""
    fig.suptitle(title, fontsize=12)
    fig.text(0.01, 0.005, note, fontsize=8, ha="left", va="bottom")
    fig.tight_layout(rect=(0, 0.03, 1 - legend_room, 0.97))
    for ext in ("png", "svg"):
        fig.savefig(out_dir / f"{name}.{ext}", dpi=110, metadata={"Date": None})
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


def over_boots(per_boot, series, metric="throughput"):
    """{threads: (mean over boots, low, high)} of one variant's boot
    estimates of a series (stats.boot_mean_ci: no interval below 3 boots)."""
    values = {}
    for _, est in per_boot:
        for (s, t, m), v in est.items():
            if s == series and m == metric and v > 0:
                values.setdefault(t, []).append(v)
    return {t: stats.boot_mean_ci(v) for t, v in sorted(values.items())}


def plot_throughput(variants, per_boot, boots, baseline, out_dir, note):
    """Per series: each variant's throughput, the mean over boots of each
    boot's estimate with the boots' 95% band; below it, when there is more
    than the baseline, each variant's ratio to the baseline with the
    interval of the report's boot-by-boot row."""
    all_series = series_with_sweeps(variants)
    loop_ps = loop_ps_of(variants)
    with_ratio = len(variants) > 1
    fig, panels = grid(len(all_series), rows_per_panel=2 if with_ratio else 1)
    for cells, series in zip(panels, all_series):
        ax = cells[0]
        ticks = set()
        for variant in variants:
            level = over_boots(per_boot[variant], series)
            if not level:
                continue
            threads = list(level)
            ticks |= set(threads)
            line, = ax.plot(threads, [c[0] / 1e6 for c in level.values()],
                            marker="o", label=variant)
            band(ax, [(t, (c[1] / 1e6, c[2] / 1e6)) for t, c in level.items()
                      if c[1] is not None], line.get_color())
            if with_ratio and variant != baseline:
                ratio_line(cells[1], boots.get(variant) or [], series,
                           line.get_color(), variant)
        ax.set(ylabel="M acquisitions/s")
        ax.set_title(panel_title(series, "throughput: mean of boots, 95% CI over boots",
                                 loop_ps), fontsize=9)
        for a in cells:
            thread_axis(a, ticks)
            a.legend(fontsize=8)
        if with_ratio:
            cells[1].set(ylabel=f"/ {baseline}")
            cells[1].set_title(panel_title(series, f"/ {baseline}: change, 95% CI "
                                           "(boot by boot)"), fontsize=9)
            cells[1].axhline(1.0, color="grey", lw=0.8)
    return save(fig, out_dir, "throughput", note,
                "Throughput: one estimate per boot, intervals over boots")


def ratio_line(ax, rows, series, color, variant):
    """A variant's ratio to the baseline per thread count, from the
    report's rows, with each row's 95% interval as a band (none below 3
    boots a side)."""
    mine = sorted((r["threads"], r) for r in rows
                  if r["series"] == series and r["metric"] == "throughput")
    if not mine:
        return
    threads = [t for t, _ in mine]
    ax.plot(threads, [1 + r["change"] for _, r in mine], marker="o", color=color,
            label=variant)
    band(ax, [(t, (1 + r["ci95"][0], 1 + r["ci95"][1])) for t, r in mine
              if r["ci95"]], color)


def band(ax, intervals, color):
    """[(x, (low, high))] as a shaded band, or as error bars where there
    is a single x (a band of one point has no width to show)."""
    if len(intervals) > 1:
        ax.fill_between([x for x, _ in intervals], [lo for _, (lo, _) in intervals],
                        [hi for _, (_, hi) in intervals], alpha=0.2, color=color)
    for x, (lo, hi) in intervals if len(intervals) == 1 else ():
        ax.errorbar([x], [(lo + hi) / 2], yerr=[[(hi - lo) / 2]], color=color,
                    capsize=4, ls="none")


LATENCY_STYLES = (("p50", ":"), ("p99", "-"), ("p99_9", "--"))


def boot_latency(variants, left_out, series, name):
    """{variant: {threads: (mean over boots of each boot's pooled
    percentile, the clock's resolution)}}; a value at or below the
    resolution (the clock read's own spread) is not a latency."""
    out = {}
    for variant, data in variants.items():
        per_threads = {}
        for _, points in data["boots"]:
            for t, group in by_config([p for p in points
                                       if estimates.position(p) not in left_out],
                                      series).items():
                value = estimates.pooled_percentile(group, name)
                if value is None:
                    continue
                resolution = max((p.get("latency_ns") or {}).get("timer_uncertainty") or 0
                                 for p in group)
                per_threads.setdefault(t, []).append((value, resolution))
        out[variant] = {t: (statistics.fmean(v for v, _ in vals),
                            max(r for _, r in vals))
                        for t, vals in sorted(per_threads.items())}
    return out


def plot_latency(variants, left_out, out_dir, note):
    """Per contended series: p50 dotted, p99 solid, p99.9 dashed, each
    the mean over boots of the boot's percentile over all its timed
    acquisitions; a value within the clock read's resolution is drawn as
    a downward triangle at that resolution: below what the clock tells."""
    all_series = series_with_sweeps(variants, "contended")
    fig, panels = grid(len(all_series))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    below_seen = False
    for (ax,), series in zip(panels, all_series):
        ticks = set()
        for name, style in LATENCY_STYLES:
            for i, (variant, pts) in enumerate(
                    boot_latency(variants, left_out, series, name).items()):
                color = colors[i % len(colors)]
                real = [(t, v) for t, (v, res) in pts.items() if v > res]
                below = [(t, res) for t, (v, res) in pts.items() if v <= res and res > 0]
                ticks |= set(pts)
                if real:
                    ax.plot(*zip(*real), marker="o", ls=style, color=color)
                if below:
                    below_seen = True
                    ax.plot(*zip(*below), marker="v", ls="none", color=color,
                            markerfacecolor="none")
        ax.set(ylabel="ns", yscale="log")
        thread_axis(ax, ticks)
        ax.set_title(panel_title(series, "lock latency, mean of boots"), fontsize=9)
    handles = [Line2D([], [], color=colors[i % len(colors)], label=v)
               for i, v in enumerate(variants)]
    handles += [Line2D([], [], color="black", ls=style, label=name.replace("_", "."))
                for name, style in LATENCY_STYLES]
    if below_seen:
        handles.append(Line2D([], [], color="black", marker="v", ls="none",
                              markerfacecolor="none",
                              label="below the clock's\nresolution"))
    fig.legend(handles=handles, loc="center right", fontsize=9)
    return save(fig, out_dir, "latency", note,
                "Lock latency: each boot's percentile over all its timed acquisitions",
                legend_room=0.1 if len(all_series) > 1 else 0.3)


def plot_fairness(variants, out_dir, note):
    """Jain's index: the median of a boot's repetitions (within one boot),
    then the mean over boots."""
    all_series = series_with_sweeps(variants)
    fig, panels = grid(len(all_series))
    for (ax,), series in zip(panels, all_series):
        for variant, data in variants.items():
            per_threads = {}
            for _, points in data["boots"]:
                for t, g in by_config(points, series).items():
                    jains = [j for j in (jain_index(p["acquisitions"]) for p in g)
                             if j is not None]
                    if jains:
                        per_threads.setdefault(t, []).append(statistics.median(jains))
            if per_threads:
                ax.plot(list(per_threads), [statistics.fmean(v) for v in per_threads.values()],
                        marker="o", label=variant)
        ax.set(ylim=(0, 1.05))
        thread_axis(ax, {t for line in ax.get_lines() for t in line.get_xdata()})
        ax.set_title(panel_title(series, "Jain's fairness index"), fontsize=9)
        ax.legend(fontsize=8)
    return save(fig, out_dir, "fairness", note,
                "Fairness: Jain's index, median within a boot, mean over boots")


def plot_ways(variants, out_dir, note):
    """Per contended series, one stacked bar per variant and thread count."""
    all_series = series_with_sweeps(variants, "contended")
    fig, panels = grid(len(all_series), width=1.0 + 0.9 * 3 * len(variants),
                       columns=2)
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
        ax.set_xticks(range(len(labels)), labels, fontsize=8)
        ax.set(ylim=(0, 1.05), ylabel="share of acquisitions")
        ax.set_title(panel_title(series, "how locks were acquired"), fontsize=9)
        ax.legend(fontsize=8)
    return save(fig, out_dir, "acquisition", note,
                "How locks were acquired: shares of all boots' acquisitions (lock events)")
