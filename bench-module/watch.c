// SPDX-License-Identifier: GPL-2.0
/*
 * watch: free-safety without the design's cooperation.
 *
 * The other free-safety checks widen the race only where a design calls its
 * release window, and see the late access only when KASAN does. This one
 * asks the design nothing. Hardware data watchpoints (the CPU's debug
 * registers, which QEMU's TCG emulates) cover every byte of one mutex that
 * threads lock and unlock, so every access to it, by any instruction of any
 * function, inlined or not, traps. The trap handler knows what only the
 * caller of the API knows: whether the task that trapped is inside
 * mutex_unlock(), and whether another task's mutex_lock() has returned
 * since that unlock began. An access by an unlocking task after another
 * task has taken the mutex is an access after release: that task could
 * have freed it.
 *
 * To see the late access, the other task must get the lock in the gap
 * between the release and the next access. So every trap of an unlocking
 * task is followed by a random delay (up to watch_delay_us), at every
 * access and not only at a release point: the unlocking task stops right
 * after each of its accesses, its release included, long enough for a
 * spinner or a woken waiter to take the lock. Whether another task took
 * it is sampled when that delay ends; the next access is then known to come
 * after. A data watchpoint traps after the access, so the instruction
 * named is the one after the access.
 *
 * Two gaps need more than that. A late access on a path that an unlock
 * takes only when it meets a locking task half-way through its own steps
 * (holding a design's wait-list guard, say, before it has queued) is
 * reached only if lockers stop half-way too: in sleeping phases, while
 * another worker holds the mutex (between its mutex_lock() returning and
 * its mutex_unlock() call), one trap in locker_delay_every of a locking
 * task is followed by a delay of up to locker_delay_us, long enough for a
 * sleeping owner to wake and unlock. Once that unlock has begun, lockers
 * run on undelayed, but a locker stopped half-way still has all its
 * remaining steps to take before its mutex_lock() returns: so after an
 * unlocking task's access that left the mutex unlocked (mutex_is_locked(),
 * the API's own answer, not a release point the design marks), one time
 * in two, the unlocking task first waits while another worker is inside
 * mutex_lock() on a CPU, until a task takes the mutex, for up to
 * release_delay_us (longer than a locker's own delay).
 *
 * The control: every CONTROL_EVERY-th unlock, the harness reads the mutex
 * once right after mutex_unlock() returns, still marked as unlocking, as a
 * late read in a design would. A method that misses it proves nothing.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/hw_breakpoint.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/perf_event.h>
#include <linux/prandom.h>
#include <linux/slab.h>
#include <linux/stacktrace.h>

#include "mutexlab.h"
#include "checks.h"

static unsigned int watch_delay_us = 20;
module_param(watch_delay_us, uint, 0444);
MODULE_PARM_DESC(watch_delay_us, "Longest random delay after each access of an unlocking task, us");

static unsigned int release_delay_us = 10000;
module_param(release_delay_us, uint, 0444);
MODULE_PARM_DESC(release_delay_us, "Longest wait for a running locker after an unlocking task's access that left the mutex unlocked, us");

static unsigned int locker_delay_every = 2;
module_param(locker_delay_every, uint, 0444);
MODULE_PARM_DESC(locker_delay_every, "Delay one trap in this many of a locking task in sleeping phases");

/* A sleeping owner sleeps a tick (HZ 250, no high-resolution timers). */
static unsigned int locker_delay_us = 8000;
module_param(locker_delay_us, uint, 0444);
MODULE_PARM_DESC(locker_delay_us, "Longest random delay after a locking task's access in sleeping phases, us (0: none)");

/* x86 has four debug registers, each covering up to 8 aligned bytes. */
#define WATCH_SLOTS	4
#define WATCH_LEN	8
#define MAX_HITS	4
#define HIT_FRAMES	12
#define CONTROL_EVERY	64
/* Spinning phases (as many workers as CPUs) alternate with sleeping ones. */
#define PHASE_MS	100
#define SLEEP_EVERY	8

struct watch_hit {
	unsigned long ip;
	unsigned long frames[HIT_FRAMES];
	unsigned int nr_frames;
	int worker;
};

struct watch_worker {
	struct watch_run *run;
	struct task_struct *task;
	struct rnd_state rnd;
	int id;
	/* Written by the worker, read by its own trap handler. */
	bool in_lock, in_unlock, in_control, stale, sleeping;
	int acquired_at_unlock;
	u64 unlocks, stale_unlocks, control_reads;
} ____cacheline_aligned_in_smp;

struct watch_run {
	/* Alone in its allocation: the watched bytes hold nothing else. */
	struct mutex *lock;
	struct perf_event * __percpu *bp[WATCH_SLOTS];
	int nr_slots;
	struct watch_worker *workers;
	int nr_workers;
	atomic_t acquired;
	atomic_t holder;	/* the worker between lock and unlock, or -1 */
	atomic_t nr_hits, control_hits;
	atomic64_t traps, unlock_traps, locker_delays, release_delays;
	atomic64_t release_wait_us;
	/* The self-test: which kinds of access trap on this machine. */
	struct task_struct *prober;
	atomic_t probe_traps;
	struct watch_hit hits[MAX_HITS];
	bool stop;
};

/* The run being watched: a trap handler has no other way to reach it. */
static struct watch_run *armed;

static struct watch_worker *worker_of(struct watch_run *run,
				      struct task_struct *task)
{
	int i;

	for (i = 0; i < run->nr_workers; i++)
		if (run->workers[i].task == task)
			return &run->workers[i];
	return NULL;
}

static void record_hit(struct watch_run *run, struct watch_worker *w,
		       struct pt_regs *regs)
{
	unsigned long frames[HIT_FRAMES + 24];
	unsigned int nr, skip;
	struct watch_hit *hit;
	int n;

	n = atomic_inc_return(w->in_control ? &run->control_hits :
			      &run->nr_hits) - 1;
	if (w->in_control || n >= MAX_HITS)
		return;
	hit = &run->hits[n];
	hit->ip = instruction_pointer(regs);
	hit->worker = w->id;
	/*
	 * The stack from here runs through the exception into the trapped
	 * code (stack_trace_save_regs() is not exported): keep the frames
	 * from the trapped instruction on.
	 */
	nr = stack_trace_save(frames, ARRAY_SIZE(frames), 0);
	for (skip = 0; skip < nr && frames[skip] != hit->ip; skip++)
		;
	if (skip == nr)
		skip = 0;
	hit->nr_frames = min_t(unsigned int, nr - skip, HIT_FRAMES);
	memcpy(hit->frames, frames + skip, hit->nr_frames * sizeof(*frames));
}

/*
 * Whether another worker is inside mutex_lock() and on a CPU: a locker
 * that may be half-way through its steps and needs no wakeup to finish
 * them. A sleeping one is not counted: its wakeup may be the very step
 * the unlocking task has yet to take.
 */
static bool locker_on_cpu(struct watch_run *run, struct watch_worker *self)
{
	int i;

	for (i = 0; i < run->nr_workers; i++) {
		struct watch_worker *v = &run->workers[i];

		if (v != self && READ_ONCE(v->in_lock) &&
		    READ_ONCE(v->task->on_cpu))
			return true;
	}
	return false;
}

/*
 * After an unlocking task's access that left the mutex unlocked, one time
 * in two: wait while a locker is on a CPU, until a task takes the mutex,
 * for up to release_delay_us. A random delay (2 ms, before) ended before a
 * locker still in its own delay got there most times; this one ends as
 * soon as it got there, or as soon as nobody can. The handler runs with
 * the debug registers off, so reading the mutex does not trap; it runs as
 * an NMI does, so it counts udelay()s rather than reading a clock.
 */
static void wait_for_a_running_locker(struct watch_run *run,
				      struct watch_worker *w)
{
	unsigned int us;

	atomic64_inc(&run->release_delays);
	for (us = 0; us < release_delay_us && locker_on_cpu(run, w) &&
	     atomic_read(&run->acquired) == w->acquired_at_unlock; us++)
		udelay(1);
	atomic64_add(us, &run->release_wait_us);
}

/* Runs in the debug exception, after the access, on the accessing CPU. */
static void watch_trap(struct perf_event *bp, struct perf_sample_data *data,
		       struct pt_regs *regs)
{
	struct watch_run *run = READ_ONCE(armed);
	struct watch_worker *w;

	if (!run)
		return;
	if (current == READ_ONCE(run->prober)) {
		atomic_inc(&run->probe_traps);
		return;
	}
	atomic64_inc(&run->traps);
	w = worker_of(run, current);
	if (!w)
		return;
	if (READ_ONCE(w->in_lock)) {
		int holder = atomic_read(&run->holder);

		if (w->sleeping && locker_delay_us && locker_delay_every &&
		    holder >= 0 && holder != w->id &&
		    !(prandom_u32_state(&w->rnd) % locker_delay_every)) {
			atomic64_inc(&run->locker_delays);
			udelay(prandom_u32_state(&w->rnd) % (locker_delay_us + 1));
		}
		return;
	}
	if (!READ_ONCE(w->in_unlock))
		return;
	atomic64_inc(&run->unlock_traps);
	if (w->stale)
		record_hit(run, w, regs);
	if (!mutex_is_locked(run->lock) && prandom_u32_state(&w->rnd) & 1)
		wait_for_a_running_locker(run, w);
	udelay(prandom_u32_state(&w->rnd) % (watch_delay_us + 1));
	if (atomic_read(&run->acquired) != w->acquired_at_unlock)
		w->stale = true;
}

static void watch_disarm(struct watch_run *run)
{
	int i;

	for (i = 0; i < run->nr_slots; i++)
		unregister_wide_hw_breakpoint(run->bp[i]);
	run->nr_slots = 0;
	WRITE_ONCE(armed, NULL);
}

static int watch_arm(struct watch_run *run)
{
	struct perf_event_attr attr;
	unsigned long start = (unsigned long)run->lock;
	int i, slots = min_t(int, WATCH_SLOTS,
			     DIV_ROUND_UP(sizeof(*run->lock), WATCH_LEN));

	WRITE_ONCE(armed, run);
	for (i = 0; i < slots; i++) {
		hw_breakpoint_init(&attr);
		attr.bp_addr = start + i * WATCH_LEN;
		attr.bp_len = HW_BREAKPOINT_LEN_8;
		/* x86 cannot watch reads alone: reads and writes. */
		attr.bp_type = HW_BREAKPOINT_RW;
		run->bp[i] = register_wide_hw_breakpoint(&attr, watch_trap,
							 NULL);
		if (IS_ERR((void __force *)run->bp[i])) {
			int err = PTR_ERR((void __force *)run->bp[i]);

			watch_disarm(run);
			return err;
		}
		run->nr_slots = i + 1;
	}
	return 0;
}

static bool sleeping_phase(void)
{
	return (jiffies_to_msecs(jiffies) / PHASE_MS) & 1;
}

static void watch_unlock(struct watch_run *run, struct watch_worker *w)
{
	atomic_set(&run->holder, -1);
	w->acquired_at_unlock = atomic_read(&run->acquired);
	w->stale = false;
	/* The handler reads these on this CPU, in the trap: program order. */
	WRITE_ONCE(w->in_unlock, true);
	barrier();
	mutex_unlock(run->lock);
	if (++w->unlocks % CONTROL_EVERY == 0) {
		WRITE_ONCE(w->in_control, true);
		barrier();
		(void)READ_ONCE(*(unsigned long *)run->lock);
		barrier();
		WRITE_ONCE(w->in_control, false);
		w->control_reads++;
	}
	barrier();
	w->stale_unlocks += w->stale;
	WRITE_ONCE(w->in_unlock, false);
}

static int watch_worker_fn(void *arg)
{
	struct watch_worker *w = arg;
	struct watch_run *run = w->run;
	unsigned int n = 0;

	while (!READ_ONCE(run->stop)) {
		bool sleeping = sleeping_phase();

		/* Spinning phases: one worker per CPU, so nobody sleeps. */
		if (!sleeping && w->id >= num_online_cpus()) {
			usleep_range(1000, 2000);
			continue;
		}
		w->sleeping = sleeping;
		WRITE_ONCE(w->in_lock, true);
		barrier();
		if (n & 1 || !mutex_trylock(run->lock))
			mutex_lock(run->lock);
		barrier();
		WRITE_ONCE(w->in_lock, false);
		atomic_set(&run->holder, w->id);
		atomic_inc(&run->acquired);
		if (sleeping && n % SLEEP_EVERY == 0)
			usleep_range(20, 50);
		else
			udelay(1 + prandom_u32_state(&w->rnd) % 4);
		watch_unlock(run, w);
		n++;
		cond_resched();
	}
	return 0;
}

static void stop_watch_workers(struct watch_run *run)
{
	int i;

	WRITE_ONCE(run->stop, true);
	for (i = 0; i < run->nr_workers && run->workers[i].task; i++)
		mutexlab_thread_stop(run->workers[i].task);
}

static int start_watch_workers(struct watch_run *run)
{
	struct watch_worker *w;
	int i, err;

	for (i = 0; i < run->nr_workers; i++) {
		w = &run->workers[i];
		w->run = run;
		w->id = i;
		prandom_seed_state(&w->rnd, get_random_u64());
		/* Created stopped: the handler must know the task first. */
		err = mutexlab_thread_create(&w->task, watch_worker_fn, w, -1,
					     "w%d", i);
		if (err)
			return err;
	}
	for (i = 0; i < run->nr_workers; i++)
		wake_up_process(run->workers[i].task);
	return 0;
}

static void report_hits(struct watch_run *run)
{
	int i, f, n = min(atomic_read(&run->nr_hits), MAX_HITS);

	results_printf("\"accesses_after_release\":[");
	for (i = 0; i < n; i++) {
		struct watch_hit *hit = &run->hits[i];

		pr_err("watch: mutexlab/w%d touched the mutex after another task took it; trapped at %pS\n",
		       hit->worker, (void *)hit->ip);
		results_printf("%s{\"task\":\"mutexlab/w%d\",\"trapped_at\":\"%pS\",\"stack\":[",
			       i ? "," : "", hit->worker, (void *)hit->ip);
		for (f = 0; f < hit->nr_frames; f++) {
			pr_err("watch:   %pS\n", (void *)hit->frames[f]);
			results_printf("%s\"%pS\"", f ? "," : "",
				       (void *)hit->frames[f]);
		}
		results_printf("]}");
	}
	results_printf("]");
}

int run_watch(const struct check_args *a)
{
	const unsigned int nr_threads = a->nr_threads;
	u64 events_before[NR_MUTEX_EVENTS], events_after[NR_MUTEX_EVENTS];
	u64 unlocks = 0, stale = 0, control_reads = 0;
	int i, hits, control_hits, watched = 0, passed = 0, err;
	struct watch_run *run;
	bool probe_trapped[NR_PROBES] = {};
	bool have_events;

	run = kzalloc(sizeof(*run), GFP_KERNEL);
	if (!run)
		return 0;
	run->workers = kcalloc(nr_threads, sizeof(*run->workers), GFP_KERNEL);
	run->lock = kzalloc(ALIGN(sizeof(*run->lock), WATCH_LEN), GFP_KERNEL);
	if (!run->workers || !run->lock) {
		err = -ENOMEM;
		goto out;
	}
	run->nr_workers = nr_threads;
	atomic_set(&run->holder, -1);
	mutex_init(run->lock);
	err = watch_arm(run);
	if (!err) {
		/* The trap handler counts the prober's traps, nothing else. */
		WRITE_ONCE(run->prober, current);
		watch_probe_kinds((atomic_long_t *)run->lock, &run->probe_traps,
				  probe_trapped);
		WRITE_ONCE(run->prober, NULL);
	}
	watched = min_t(int, sizeof(*run->lock), run->nr_slots * WATCH_LEN);
	have_events = snapshot_events(events_before);
	if (!err)
		err = start_watch_workers(run);
	if (!err)
		msleep(a->duration_ms);
	stop_watch_workers(run);
	if (have_events)
		have_events = snapshot_events(events_after);
	if (run->nr_slots)
		watch_disarm(run);

	for (i = 0; i < nr_threads; i++) {
		unlocks += run->workers[i].unlocks;
		stale += run->workers[i].stale_unlocks;
		control_reads += run->workers[i].control_reads;
	}
	hits = atomic_read(&run->nr_hits);
	control_hits = atomic_read(&run->control_hits);
	results_record("check");
	results_printf("\"check\":\"watch\",\"method\":\"hw_breakpoint\",\"threads\":%u,\"duration_ms\":%u,\"watch_delay_us\":%u,\"mutex_bytes\":%zu,\"watched_bytes\":%d,\"acquisitions\":%d,\"unlocks\":%llu,\"raced_unlocks\":%llu,\"traps\":%lld,\"unlock_traps\":%lld,\"release_delay_us\":%u,\"release_delays\":%lld,\"release_wait_us\":%lld,\"locker_delay_us\":%u,\"locker_delays\":%lld,\"control_reads\":%llu,\"control_caught\":%d,\"hits\":%d,",
		       nr_threads, a->duration_ms, watch_delay_us, sizeof(*run->lock),
		       watched,
		       atomic_read(&run->acquired), unlocks, stale,
		       atomic64_read(&run->traps),
		       atomic64_read(&run->unlock_traps), release_delay_us,
		       atomic64_read(&run->release_delays),
		       atomic64_read(&run->release_wait_us), locker_delay_us,
		       atomic64_read(&run->locker_delays), control_reads,
		       control_hits, hits);
	watch_report_probes(probe_trapped);
	report_hits(run);
	results_printf(",");
	report_event_deltas(have_events, events_before, events_after);
	results_printf("}\n");
	pr_info("watch: %llu unlocks, %llu raced, %d accesses after release, control %d of %llu\n",
		unlocks, stale, hits, control_hits, control_reads);

	passed += !err && !hits;
	results_ktap(1, !err && !hits, a->name, "no_access_after_release",
		     err ? "could not watch the mutex" :
		     "an unlocking task touched the mutex after another task took it");
	passed += control_hits > 0;
	results_ktap(2, control_hits > 0, a->name, "control_caught",
		     "the watchpoint missed the harness's own late read");
	passed += stale > 0;
	results_ktap(3, stale > 0, a->name, "raced_unlocks",
		     "no task took the mutex while another was unlocking it");
	for (i = 0; i < NR_PROBES && probe_trapped[i]; i++)
		;
	passed += i == NR_PROBES;
	results_ktap(4, i == NR_PROBES, a->name, "every_access_kind_traps",
		     "some kind of access to the mutex does not trap here (see traps_on)");
	if (err)
		results_printf("# error %d\n", err);
out:
	kfree(run->lock);
	kfree(run->workers);
	kfree(run);
	if (err == -ENOMEM)
		results_ktap(1, false, a->name, "no_access_after_release",
			     "no memory");
	return passed;
}
