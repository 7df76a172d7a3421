/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * zlock - the file system core's locks, taken through wrappers that, in a
 * checking build (ZONEFUSE_CHECKS: debug and sanitizer builds), remember
 * which locks each thread holds. That makes "caller holds X" a check, not
 * a wish (ZLOCK_HELD()), and checks the lock order of zfs_i.h on every
 * blocking acquisition: a lock of a class may be taken only while every
 * lock held is of a lower class. Trylocks are exempt (they never wait:
 * that is how heads' locks are taken under alloc_lock), and so are the
 * inodes' rt locks among themselves (taken in increasing ino order, which
 * the class cannot tell). A violation is reported and the process aborts.
 * Release builds compile all of it down to the plain pthread calls.
 */
#ifndef ZONEFUSE_ZLOCK_H
#define ZONEFUSE_ZLOCK_H

#include <pthread.h>
#include <stdbool.h>

/* The lock order of zfs_i.h, lowest first. */
enum zlock_class {
	ZLOCK_GC = 1, /* zfs.gc_lock */
	ZLOCK_META,   /* zfs.meta_lock */
	ZLOCK_RT,     /* zfs_rt.lock */
	ZLOCK_WB,     /* zfs.wb_lock */
	ZLOCK_HEAD,   /* zfs_head.lock */
	ZLOCK_ALLOC,  /* zfs.alloc_lock */
	ZLOCK_LOST,   /* zfs.lost_lock */
	ZLOCK_BG,     /* zfs.bg_lock */
};

#ifdef ZONEFUSE_CHECKS
/* @lock was taken (@excl: exclusive; @tried: by a trylock). */
void zlock_note(const void *lock, enum zlock_class cls, bool excl, bool tried);
/* @lock is about to be let go. */
void zlock_unnote(const void *lock);
/* Does this thread hold @lock (exclusive, with @excl)? */
bool zlock_held(const void *lock, bool excl);
/* Abort with a message naming @what, @file and @line. */
void zlock_fail(const char *what, const char *file, int line);

#define ZLOCK_HELD(lock)                                                       \
	((void)(zlock_held((lock), false) ||                                   \
		(zlock_fail("caller holds " #lock, __FILE__, __LINE__), 0)))
#define ZLOCK_HELD_EXCL(lock)                                                  \
	((void)(zlock_held((lock), true) ||                                    \
		(zlock_fail("caller holds " #lock " exclusive", __FILE__,      \
			    __LINE__),                                         \
		 0)))
#else
static inline void zlock_note(const void *lock, enum zlock_class cls,
			      bool excl, bool tried)
{
	(void)lock;
	(void)cls;
	(void)excl;
	(void)tried;
}

static inline void zlock_unnote(const void *lock)
{
	(void)lock;
}

#define ZLOCK_HELD(lock) ((void)0)
#define ZLOCK_HELD_EXCL(lock) ((void)0)
#endif

static inline void zlock_mutex(pthread_mutex_t *m, enum zlock_class cls)
{
	pthread_mutex_lock(m);
	zlock_note(m, cls, true, false);
}

/* 0 if taken, or pthread_mutex_trylock()'s error. */
static inline int zlock_mutex_try(pthread_mutex_t *m, enum zlock_class cls)
{
	int ret = pthread_mutex_trylock(m);

	if (!ret)
		zlock_note(m, cls, true, true);
	return ret;
}

static inline void zlock_unmutex(pthread_mutex_t *m)
{
	zlock_unnote(m);
	pthread_mutex_unlock(m);
}

static inline void zlock_rd(pthread_rwlock_t *l, enum zlock_class cls)
{
	pthread_rwlock_rdlock(l);
	zlock_note(l, cls, false, false);
}

static inline void zlock_wr(pthread_rwlock_t *l, enum zlock_class cls)
{
	pthread_rwlock_wrlock(l);
	zlock_note(l, cls, true, false);
}

static inline void zlock_unrw(pthread_rwlock_t *l)
{
	zlock_unnote(l);
	pthread_rwlock_unlock(l);
}

#endif /* ZONEFUSE_ZLOCK_H */
