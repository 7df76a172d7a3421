// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The checking half of zlock.h: each thread's held locks, in a small
 * array of its own (a thread of the file system holds at most a handful:
 * gc_lock, meta_lock, an rt lock or two, a head's, alloc_lock, a leaf).
 * No lock protects it: only its thread touches it.
 */
#include <stdio.h>
#include <stdlib.h>

#include "zlock.h"
#include "zonefuse/util.h"

#ifdef ZONEFUSE_CHECKS

#define ZLOCK_MAX_HELD 16

struct zlock_held {
	const void *lock;
	enum zlock_class cls;
	bool excl;
};

static _Thread_local struct zlock_held zlock_stack[ZLOCK_MAX_HELD];
static _Thread_local unsigned int zlock_depth;

static const char *zlock_name(enum zlock_class cls)
{
	static const char *const name[] = {
		[ZLOCK_GC] = "gc_lock", [ZLOCK_META] = "meta_lock",
		[ZLOCK_RT] = "an rt lock", [ZLOCK_WB] = "wb_lock",
		[ZLOCK_HEAD] = "a head's lock", [ZLOCK_ALLOC] = "alloc_lock",
		[ZLOCK_LOST] = "lost_lock", [ZLOCK_BG] = "bg_lock",
	};

	return cls <= ZLOCK_BG ? name[cls] : "?";
}

void zlock_fail(const char *what, const char *file, int line)
{
	zlog_err("internal error: %s:%d: %s (lock check)", file, line, what);
	abort();
}

void zlock_note(const void *lock, enum zlock_class cls, bool excl, bool tried)
{
	unsigned int i;

	for (i = 0; !tried && i < zlock_depth; i++) {
		enum zlock_class h = zlock_stack[i].cls;
		char msg[160];

		if (h < cls || (h == cls && cls == ZLOCK_RT &&
				zlock_stack[i].lock != lock))
			continue;
		snprintf(msg, sizeof(msg), "%s taken while holding %s: against the lock order (zfs_i.h)",
			 zlock_name(cls), zlock_name(h));
		zlock_fail(msg, __FILE__, __LINE__);
	}
	if (zlock_depth == ZLOCK_MAX_HELD)
		zlock_fail("more locks held than the check can count", __FILE__,
			   __LINE__);
	zlock_stack[zlock_depth++] =
		(struct zlock_held) { .lock = lock, .cls = cls, .excl = excl };
}

void zlock_unnote(const void *lock)
{
	unsigned int i = zlock_depth;

	while (i && zlock_stack[i - 1].lock != lock)
		i--;
	if (!i)
		zlock_fail("a lock let go that this thread does not hold",
			   __FILE__, __LINE__);
	for (; i < zlock_depth; i++)
		zlock_stack[i - 1] = zlock_stack[i];
	zlock_depth--;
}

bool zlock_held(const void *lock, bool excl)
{
	unsigned int i;

	for (i = 0; i < zlock_depth; i++)
		if (zlock_stack[i].lock == lock && (!excl || zlock_stack[i].excl))
			return true;
	return false;
}

#endif /* ZONEFUSE_CHECKS */
