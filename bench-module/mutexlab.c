// SPDX-License-Identifier: GPL-2.0
/*
 * mutexlab: measure a mutex design from inside a guest kernel.
 *
 * Loading the module runs a sweep: for each thread count, T kthreads contend
 * on one mutex for a fixed time, each critical section doing plain increments
 * of a shared counter. Every point reports per-thread acquisitions as a JSON
 * line and a KTAP result; the result is "not ok" when the shared counter
 * shows that two threads were inside the critical section at once.
 *
 * Results are streamed through debugfs mutexlab/results: a read blocks until
 * more output exists or the sweep is over, so that a reader in the guest can
 * forward each line as soon as it is produced, and a crash loses nothing that
 * was measured before it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/utsname.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>

#define MUTEXLAB_MAX_POINTS	64
#define MUTEXLAB_LOG_SIZE	(1024 * 1024)

static int threads[MUTEXLAB_MAX_POINTS];
static int nr_thread_points;
module_param_array_named(threads, threads, int, &nr_thread_points, 0444);
MODULE_PARM_DESC(threads, "Thread counts to sweep (default 1..2*online CPUs)");

static unsigned int duration_ms = 1000;
module_param(duration_ms, uint, 0444);
MODULE_PARM_DESC(duration_ms, "Measured time per point, ms");

static unsigned int warmup_ms = 100;
module_param(warmup_ms, uint, 0444);
MODULE_PARM_DESC(warmup_ms, "Time run before measuring each point, ms");

static unsigned int reps = 5;
module_param(reps, uint, 0444);
MODULE_PARM_DESC(reps, "Repetitions of each point");

static unsigned int cs_loops = 50;
module_param(cs_loops, uint, 0444);
MODULE_PARM_DESC(cs_loops, "Shared-counter increments per critical section");

/* Test-only: prove that the host notices a crash and a broken lock. */
static bool test_bug;
module_param(test_bug, bool, 0444);
MODULE_PARM_DESC(test_bug, "TEST ONLY: BUG() after the first point");

static bool test_unlocked;
module_param(test_unlocked, bool, 0444);
MODULE_PARM_DESC(test_unlocked, "TEST ONLY: skip the mutex, so the exclusion check must fail");

/* Append-only result log with one writer (the sweep) and blocking readers. */
static struct {
	char *buf;
	size_t len;
	bool done;
	bool overflowed;
	wait_queue_head_t wait;
} results;

static __printf(1, 2) void results_printf(const char *fmt, ...)
{
	size_t len = results.len;
	va_list args;
	int n;

	va_start(args, fmt);
	n = vsnprintf(results.buf + len, MUTEXLAB_LOG_SIZE - len, fmt, args);
	va_end(args);
	if (n < 0 || len + n >= MUTEXLAB_LOG_SIZE) {
		results.overflowed = true;
		return;
	}
	/* Publish the text before the length that makes it readable. */
	smp_store_release(&results.len, len + n);
	wake_up_interruptible(&results.wait);
}

static void results_finish(void)
{
	/* Readers that see done also see all text published before it. */
	smp_store_release(&results.done, true);
	wake_up_interruptible(&results.wait);
}

static size_t results_published(void)
{
	/* Pairs with the release in results_printf(): text before length. */
	return smp_load_acquire(&results.len);
}

static bool results_done(void)
{
	/* Pairs with the release in results_finish(). */
	return smp_load_acquire(&results.done);
}

static ssize_t results_read(struct file *file, char __user *ubuf,
			    size_t count, loff_t *ppos)
{
	int ret;

	ret = wait_event_interruptible(results.wait,
				       *ppos < results_published() ||
				       results_done());
	if (ret)
		return ret;
	return simple_read_from_buffer(ubuf, count, ppos, results.buf,
				       results_published());
}

static const struct file_operations results_fops = {
	.owner = THIS_MODULE,
	.read = results_read,
	.llseek = no_llseek,
};

/* One contended run: the lock and the state it protects. */
struct contended_run {
	struct mutex lock;
	struct completion all_ready;
	struct completion start;
	atomic_t ready;
	int nr_workers;
	bool stop;
	unsigned long shared ____cacheline_aligned_in_smp;
};

struct worker {
	struct contended_run *run;
	struct task_struct *task;
	u64 acquisitions;
} ____cacheline_aligned_in_smp;

static void critical_section(struct contended_run *run)
{
	unsigned int i;

	/* Plain read-modify-write: overlapping owners lose increments. */
	for (i = 0; i < cs_loops; i++)
		WRITE_ONCE(run->shared, READ_ONCE(run->shared) + 1);
}

static int contended_worker(void *arg)
{
	struct worker *w = arg;
	struct contended_run *run = w->run;

	if (atomic_inc_return(&run->ready) == run->nr_workers)
		complete(&run->all_ready);
	wait_for_completion(&run->start);
	while (!READ_ONCE(run->stop)) {
		if (test_unlocked) {
			critical_section(run);
		} else {
			mutex_lock(&run->lock);
			critical_section(run);
			mutex_unlock(&run->lock);
		}
		/* Only this thread writes it; the sweep reads it racily. */
		WRITE_ONCE(w->acquisitions, w->acquisitions + 1);
		cond_resched();
	}
	return 0;
}

static void snapshot(struct worker *workers, int nr, u64 *counts)
{
	int i;

	for (i = 0; i < nr; i++)
		counts[i] = READ_ONCE(workers[i].acquisitions);
}

static int start_workers(struct contended_run *run, struct worker *workers,
			 int nr)
{
	int i;

	for (i = 0; i < nr; i++) {
		workers[i].run = run;
		workers[i].task = kthread_create(contended_worker, &workers[i],
						 "mutexlab/%d", i);
		if (IS_ERR(workers[i].task)) {
			int err = PTR_ERR(workers[i].task);

			workers[i].task = NULL;
			return err;
		}
		/* kthread_stop() needs the task even once it has exited. */
		get_task_struct(workers[i].task);
		wake_up_process(workers[i].task);
	}
	return 0;
}

static void stop_workers(struct contended_run *run, struct worker *workers,
			 int nr)
{
	int i;

	WRITE_ONCE(run->stop, true);
	/* Workers never started must not wait for a start that never comes. */
	complete_all(&run->start);
	for (i = 0; i < nr && workers[i].task; i++) {
		kthread_stop(workers[i].task);
		put_task_struct(workers[i].task);
	}
}

static void report_point(int test_nr, int nr, unsigned int rep, u64 elapsed_ns,
			 const u64 *before, const u64 *after, bool exclusive)
{
	int i;

	results_printf("{\"type\":\"point\",\"workload\":\"contended\",\"threads\":%d,\"rep\":%u,\"elapsed_ns\":%llu,\"cs_loops\":%u,\"acquisitions\":[",
		       nr, rep, elapsed_ns, cs_loops);
	for (i = 0; i < nr; i++)
		results_printf("%s%llu", i ? "," : "", after[i] - before[i]);
	results_printf("],\"mutual_exclusion\":%s}\n",
		       exclusive ? "true" : "false");
	results_printf("%sok %d - contended/%dt/rep%u\n",
		       exclusive ? "" : "not ", test_nr, nr, rep);
}

/* Returns 1 when the point passed, 0 when it failed, or -errno. */
static int run_contended_point(int test_nr, int nr, unsigned int rep)
{
	struct contended_run *run;
	struct worker *workers;
	u64 *before, *after, t0, total = 0;
	bool exclusive;
	int i, err;

	run = kzalloc(sizeof(*run), GFP_KERNEL);
	workers = kcalloc(nr, sizeof(*workers), GFP_KERNEL);
	before = kcalloc(nr, sizeof(*before), GFP_KERNEL);
	after = kcalloc(nr, sizeof(*after), GFP_KERNEL);
	if (!run || !workers || !before || !after) {
		err = -ENOMEM;
		goto out_free;
	}
	mutex_init(&run->lock);
	init_completion(&run->all_ready);
	init_completion(&run->start);
	run->nr_workers = nr;

	err = start_workers(run, workers, nr);
	if (err)
		goto out_stop;
	wait_for_completion(&run->all_ready);

	complete_all(&run->start);
	msleep(warmup_ms);
	snapshot(workers, nr, before);
	t0 = ktime_get_ns();
	msleep(duration_ms);
	snapshot(workers, nr, after);
	t0 = ktime_get_ns() - t0;
	stop_workers(run, workers, nr);

	for (i = 0; i < nr; i++)
		total += workers[i].acquisitions;
	exclusive = run->shared == total * cs_loops;
	report_point(test_nr, nr, rep, t0, before, after, exclusive);
	pr_info("contended %dt rep %u: %llu acquisitions in %llu ns%s\n",
		nr, rep, total, t0, exclusive ? "" : ", MUTUAL EXCLUSION BROKEN");
	err = exclusive;
	goto out_free;

out_stop:
	stop_workers(run, workers, nr);
out_free:
	kfree(after);
	kfree(before);
	kfree(workers);
	kfree(run);
	return err;
}

/* locktorture style: every parameter, at the start and at the end. */
static void echo_params(const char *when)
{
	char list[MUTEXLAB_MAX_POINTS * 5] = "";
	size_t len = 0;
	int i;

	for (i = 0; i < nr_thread_points; i++)
		len += scnprintf(list + len, sizeof(list) - len, "%s%d",
				 i ? "," : "", threads[i]);
	pr_info("%s: duration_ms=%u warmup_ms=%u reps=%u cs_loops=%u test_bug=%d test_unlocked=%d threads=%s\n",
		when, duration_ms, warmup_ms, reps, cs_loops, test_bug,
		test_unlocked, list);
}

static void report_meta(void)
{
	int i;

	results_printf("{\"type\":\"meta\",\"uname_r\":\"%s\",\"uname_v\":\"%s\",\"online_cpus\":%u,\"sizeof_mutex\":%zu,\"params\":{\"duration_ms\":%u,\"warmup_ms\":%u,\"reps\":%u,\"cs_loops\":%u,\"test_bug\":%s,\"test_unlocked\":%s,\"threads\":[",
		       init_utsname()->release, init_utsname()->version,
		       num_online_cpus(), sizeof(struct mutex), duration_ms,
		       warmup_ms, reps, cs_loops, test_bug ? "true" : "false",
		       test_unlocked ? "true" : "false");
	for (i = 0; i < nr_thread_points; i++)
		results_printf("%s%d", i ? "," : "", threads[i]);
	results_printf("]}}\n");
}

static int check_params(void)
{
	int i;

	if (!nr_thread_points) {
		/* Default sweep: 1 .. 2 * vCPUs, so that waiters must sleep. */
		nr_thread_points = min_t(int, 2 * num_online_cpus(),
					 MUTEXLAB_MAX_POINTS);
		for (i = 0; i < nr_thread_points; i++)
			threads[i] = i + 1;
	}
	for (i = 0; i < nr_thread_points; i++) {
		if (threads[i] < 1 || threads[i] > 1024) {
			pr_err("threads[%d]=%d is out of range 1..1024\n", i,
			       threads[i]);
			return -EINVAL;
		}
	}
	if (!reps || !duration_ms) {
		pr_err("reps and duration_ms must be positive\n");
		return -EINVAL;
	}
	return 0;
}

/*
 * Verdicts go to KTAP, never to the module's init status: a failed init would
 * unload the module and its results file before the guest had read them all.
 */
static void run_sweep(void)
{
	int passed = 0, test_nr = 0, i, ret;
	unsigned int rep;

	results_printf("KTAP version 1\n");
	report_meta();
	results_printf("1..%u\n", nr_thread_points * reps);
	for (rep = 1; rep <= reps; rep++) {
		for (i = 0; i < nr_thread_points; i++) {
			ret = run_contended_point(++test_nr, threads[i], rep);
			if (ret < 0)
				results_printf("not ok %d - contended/%dt/rep%u # error %d\n",
					       test_nr, threads[i], rep, ret);
			else
				passed += ret;
			/* The crash comes after a point so that it has results to keep. */
			if (test_bug)
				BUG();
		}
	}
	results_printf("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:0 error:0\n",
		       passed, test_nr - passed);
	if (results.overflowed)
		pr_err("result log overflowed; output is truncated\n");
}

static struct dentry *debugfs_dir;

static int __init mutexlab_init(void)
{
	int ret;

	ret = check_params();
	if (ret)
		return ret;
	echo_params("start");

	results.buf = vmalloc(MUTEXLAB_LOG_SIZE);
	if (!results.buf)
		return -ENOMEM;
	init_waitqueue_head(&results.wait);
	debugfs_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_file("results", 0444, debugfs_dir, NULL, &results_fops);

	run_sweep();
	results_finish();
	echo_params("end");
	return 0;
}

static void __exit mutexlab_exit(void)
{
	debugfs_remove_recursive(debugfs_dir);
	vfree(results.buf);
}

module_init(mutexlab_init);
module_exit(mutexlab_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("mutexlab: mutex design benchmark run inside a guest");
