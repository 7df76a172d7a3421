/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The FUSE transport (xport.c): how requests reach the low-level
 * operations and how their replies go back, either through /dev/fuse
 * (read and writev, libfuse's own loop) or through FUSE-over-io_uring
 * queues, one per possible CPU, beside that loop. Either way it answers
 * the requests libfuse 3.14 does not know that matter to us (SYNCFS) and
 * makes DESTROY wait for durability.
 */
#ifndef ZONEFUSE_XPORT_H
#define ZONEFUSE_XPORT_H

#include "fuse_ll.h"

struct zfs;
struct xp;

enum xp_choice {
	XP_AUTO,  /* io_uring when the kernel offers it, else /dev/fuse */
	XP_DEV,	  /* /dev/fuse only */
	XP_URING, /* io_uring, or no mount */
};

/* "auto", "dev" or "uring" as @c. -EINVAL for anything else. */
int xp_parse(const char *s, enum xp_choice *c);

/*
 * A transport for @se (not mounted yet) over @fs, chosen by @c. Checks
 * what it can before the mount: with XP_URING and a kernel whose fuse
 * module has io_uring off or missing, returns -EOPNOTSUPP and says why in
 * @why. -ENOMEM.
 */
int xp_create(struct fuse_session *se, struct zfs *fs, enum xp_choice c,
	      struct xp **out, char *why, size_t len);

/*
 * Whether the io_uring queue threads may run SCHED_IDLE while the machine
 * has idle CPU time (the default, true), so that a caller woken by their
 * reply stays on its CPU; false keeps them SCHED_OTHER (-o
 * uring_sched=normal). Call before the mount's INIT.
 */
void xp_set_idle(struct xp *xp, bool on);

/*
 * Take over the mounted session's /dev/fuse I/O (fuse_session_custom_io).
 * The session's userdata must be a struct fs_ll whose .xp is @xp.
 * Returns 0 or -errno.
 */
int xp_attach(struct xp *xp);

/*
 * Serve the session until it ends: libfuse's multi-threaded /dev/fuse
 * loop, with the io_uring queues beside it once INIT chose them. Returns
 * what fuse_session_loop_mt() returns, after the queues have stopped.
 */
int xp_loop(struct xp *xp, struct fuse_loop_config *cfg);

/* Free @xp (NULL is fine); call after xp_loop() returned. */
void xp_destroy(struct xp *xp);

/*
 * Where an operation on this thread may build a reply of @size bytes so
 * that sending it copies nothing: the payload buffer of the io_uring
 * entry whose request the thread serves (page-aligned, so the device can
 * read into it), valid until the reply is sent. NULL otherwise (on
 * /dev/fuse, or too big): use a buffer of your own.
 */
void *xp_reply_buf(size_t size);

#endif /* ZONEFUSE_XPORT_H */
