// SPDX-License-Identifier: GPL-2.0
/*
 * The module's kthreads: workers, hogs, the signaller and the probe's
 * waiter, each started and stopped the same way. A thread is held by a
 * reference from its creation, because kthread_stop() needs the task even
 * once its function has returned.
 */
#include <linux/kernel.h>
#include <linux/kthread.h>
#include <linux/sched/task.h>
#include <linux/stdarg.h>

#include "mutexlab.h"

static int thread_vcreate(struct task_struct **task, int (*fn)(void *),
			  void *data, int cpu, const char *fmt, va_list args)
{
	char name[TASK_COMM_LEN];
	struct task_struct *t;

	vsnprintf(name, sizeof(name), fmt, args);
	*task = NULL;
	t = kthread_create(fn, data, "mutexlab/%s", name);
	if (IS_ERR(t))
		return PTR_ERR(t);
	if (cpu >= 0)
		kthread_bind(t, cpu);
	get_task_struct(t);
	*task = t;
	return 0;
}

/*
 * A new kthread running fn(data), named "mutexlab/<name>", bound to cpu
 * unless cpu is negative, held by a reference and not yet woken (the caller
 * wakes it with wake_up_process()), in *task; 0, or -errno with *task NULL.
 */
int mutexlab_thread_create(struct task_struct **task, int (*fn)(void *),
			   void *data, int cpu, const char *fmt, ...)
{
	va_list args;
	int err;

	va_start(args, fmt);
	err = thread_vcreate(task, fn, data, cpu, fmt, args);
	va_end(args);
	return err;
}

/* mutexlab_thread_create(), and the thread woken. */
int mutexlab_thread_start(struct task_struct **task, int (*fn)(void *),
			  void *data, int cpu, const char *fmt, ...)
{
	va_list args;
	int err;

	va_start(args, fmt);
	err = thread_vcreate(task, fn, data, cpu, fmt, args);
	va_end(args);
	if (!err)
		wake_up_process(*task);
	return err;
}

/* Stops a thread of mutexlab_thread_create() and drops its reference. */
void mutexlab_thread_stop(struct task_struct *task)
{
	kthread_stop(task);
	put_task_struct(task);
}
