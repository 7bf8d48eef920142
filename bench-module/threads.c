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

/*
 * A new kthread running fn(data), named "mutexlab/<name>", bound to cpu
 * unless cpu is negative, held by a reference and not yet woken (the caller
 * wakes it with wake_up_process()); or an ERR_PTR().
 */
struct task_struct *mutexlab_thread_create(int (*fn)(void *), void *data,
					   int cpu, const char *fmt, ...)
{
	struct task_struct *task;
	char name[TASK_COMM_LEN];
	va_list args;

	va_start(args, fmt);
	vsnprintf(name, sizeof(name), fmt, args);
	va_end(args);
	task = kthread_create(fn, data, "mutexlab/%s", name);
	if (IS_ERR(task))
		return task;
	if (cpu >= 0)
		kthread_bind(task, cpu);
	get_task_struct(task);
	return task;
}

/* Stops a thread of mutexlab_thread_create() and drops its reference. */
void mutexlab_thread_stop(struct task_struct *task)
{
	kthread_stop(task);
	put_task_struct(task);
}
