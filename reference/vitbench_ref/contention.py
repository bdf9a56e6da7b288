"""Foreign CPU load of a timing window, computed as vitbench's Go side does (bench/contention):
the system's busy ticks from /proc/stat minus this process's own CPU time (getrusage, every
thread), over the window's capacity (wall time x CPUs).  Where /proc/stat is missing the load is
None (written as null), never 0."""

import resource
import time

THRESHOLD = 0.10  # a window above this foreign load is contended
TICKS_PER_SECOND = 100  # USER_HZ, the unit of /proc/stat


def parse_stat(text):
    """(busy ticks, total ticks, CPUs) from /proc/stat text: busy is every column of the
    aggregate cpu line but idle and iowait (guest time is already inside user and nice)."""
    busy = total = None
    cpus = 0
    for line in text.splitlines():
        f = line.split()
        if not f or not f[0].startswith("cpu"):
            continue
        if f[0] != "cpu":
            cpus += f[0][3:].isdigit()
            continue
        if len(f) < 5:
            raise ValueError("/proc/stat: cpu line %r: want at least user nice system idle" % line)
        v = [int(x) for x in f[1:9]]
        v += [0] * (8 - len(v))
        total = sum(v)
        busy = total - v[3] - v[4]
    if busy is None or cpus == 0:
        raise ValueError("/proc/stat: no aggregate cpu line or no cpuN lines")
    return busy, total, cpus


def foreign(before, after, own_s, wall_s):
    """((after busy - before busy) / TICKS_PER_SECOND - own_s) / (wall_s x CPUs), clamped to
    [0, 1]; None for an empty window or counters that went backwards."""
    cpus = max(before[2], after[2])
    if wall_s <= 0 or cpus == 0 or after[0] < before[0]:
        return None
    load = ((after[0] - before[0]) / TICKS_PER_SECOND - own_s) / (wall_s * cpus)
    return min(1.0, max(0.0, load))


def contended(load, wall_s):
    """Whether load counts as contended: above THRESHOLD by more than one tick per CPU of
    rounding (1 / (wall_s x TICKS_PER_SECOND)); None is never contended."""
    return load is not None and wall_s > 0 and load > THRESHOLD + 1.0 / (wall_s * TICKS_PER_SECOND)


def _read_stat():
    try:
        with open("/proc/stat", encoding="ascii") as f:
            return parse_stat(f.read())
    except (OSError, ValueError):
        return None


def _own_cpu():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


class Window:
    """A timing window: Window() snapshots the counters, stop() returns (load or None, contended)."""

    def __init__(self):
        self.t0 = time.perf_counter()
        self.before = _read_stat()
        self.own0 = _own_cpu()

    def stop(self):
        wall = time.perf_counter() - self.t0
        after = _read_stat()
        if self.before is None or after is None:
            return None, False
        load = foreign(self.before, after, _own_cpu() - self.own0, wall)
        return load, contended(load, wall)


def load_line(name, load, is_contended):
    """The text-format line of a row's load (bench/results/FORMAT.md): "# load <name>: 0.031"
    [+ " contended"], "null" when not measured."""
    return "# load %s: %s%s" % (name, "null" if load is None else "%.3f" % load, " contended" if is_contended else "")
