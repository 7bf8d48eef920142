// SPDX-License-Identifier: GPL-2.0
/*
 * The module's results channel: debugfs mutexlab/results. A read blocks until
 * more output exists or the run is over, so that a reader in the guest can
 * forward each line as soon as it is produced, and a crash loses nothing that
 * was forwarded before it.
 */
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>

#include "mutexlab.h"

#define MUTEXLAB_LOG_SIZE	(1024 * 1024)

/* Append-only result log with one writer (the sweep) and blocking readers. */
static struct {
	char *buf;
	size_t len;
	size_t read_upto;
	bool done;
	bool overflowed;
	wait_queue_head_t wait;
} results;

__printf(1, 2) void results_printf(const char *fmt, ...)
{
	size_t len = results.len;
	va_list args;
	int n;

	/* After a line that did not fit, nothing: no hole in the stream. */
	if (results.overflowed)
		return;
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

/*
 * Opens a data record: a JSON object on a KTAP diagnostic line ("# "), so
 * that a KTAP parser skips it and the host finds it by its prefix. The
 * caller adds the other fields and closes it with "}\n".
 */
void results_record(const char *type)
{
	results_printf("# {\"type\":\"%s\",", type);
}

/* A check's KTAP result, "<check>/<name>", with why it failed. */
void results_ktap(int nr, bool ok, const char *check, const char *name,
		  const char *why)
{
	results_printf("%sok %d - %s/%s%s%s\n", ok ? "" : "not ", nr, check,
		       name, ok ? "" : " # ", ok ? "" : why);
}

void results_finish(void)
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
	ret = simple_read_from_buffer(ubuf, count, ppos, results.buf,
				      results_published());
	WRITE_ONCE(results.read_upto, *ppos);
	return ret;
}

/*
 * Test only: a crash that follows a point must leave its lines out of the
 * guest first, or the test of "results before a crash are kept" races the
 * reader. Waits (at most 2 s) for the reader, then for the UART to drain.
 */
void results_wait_forwarded(void)
{
	int i;

	for (i = 0; i < 200 && READ_ONCE(results.read_upto) < results.len; i++)
		msleep(20);
	msleep(200);
}

static const struct file_operations results_fops = {
	.owner = THIS_MODULE,
	.read = results_read,
	.llseek = no_llseek,
};

static struct dentry *debugfs_dir;

int results_init(void)
{
	results.buf = vmalloc(MUTEXLAB_LOG_SIZE);
	if (!results.buf)
		return -ENOMEM;
	init_waitqueue_head(&results.wait);
	debugfs_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_file("results", 0444, debugfs_dir, NULL, &results_fops);
	return 0;
}

bool results_overflowed(void)
{
	return results.overflowed;
}

void results_exit(void)
{
	debugfs_remove_recursive(debugfs_dir);
	vfree(results.buf);
}
