/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The part of the FUSE kernel ABI that Debian 12's <linux/fuse.h>
 * (linux-libc-dev 6.1, protocol 7.38) lacks: FUSE-over-io_uring, from
 * protocol 7.42 (Linux 6.14, include/uapi/linux/fuse.h; unchanged in the
 * 6.18 this runs on). How the kernel uses them: fs/fuse/dev_uring.c and
 * Documentation/filesystems/fuse-io-uring.rst.
 *
 * Each definition is guarded so that a newer linux-libc-dev that has them
 * wins, and the sizes are asserted: they are the kernel's, not ours.
 */
#ifndef ZONEFUSE_FUSE_ABI_H
#define ZONEFUSE_FUSE_ABI_H

#include <linux/fuse.h>
#include <stddef.h>
#include <stdint.h>

/* INIT flags2 bit (flags bit 41): the daemon will serve io_uring queues. */
#ifndef FUSE_OVER_IO_URING
#define FUSE_OVER_IO_URING (1ULL << 41)
#endif

/* 7.34: sync(1)/syncfs(2) on the mount (fuseblk mounts only, see xport.c). */
#if FUSE_KERNEL_MINOR_VERSION < 34
#define FUSE_SYNCFS 50
struct fuse_syncfs_in {
	uint64_t padding;
};
#endif

#if FUSE_KERNEL_MINOR_VERSION < 42
/* The two fixed areas at the start of a ring entry's header buffer. */
#define FUSE_URING_IN_OUT_HEADER_SZ 128
#define FUSE_URING_OP_IN_OUT_SZ 128

/* Written by the kernel with a request, by the daemon with its reply. */
struct fuse_uring_ent_in_out {
	uint64_t flags;
	uint64_t commit_id;  /* the request's unique: echoed in the commit */
	uint32_t payload_sz; /* bytes used in the payload buffer */
	uint32_t padding;
	uint64_t reserved;
};

/* iov[0] of a REGISTER: where each request's headers arrive. */
struct fuse_uring_req_header {
	char in_out[FUSE_URING_IN_OUT_HEADER_SZ]; /* fuse_in_header on fetch,
						     fuse_out_header on commit */
	char op_in[FUSE_URING_OP_IN_OUT_SZ];	  /* the opcode's own header
						     (in_args[0]), may be empty */
	struct fuse_uring_ent_in_out ring_ent_in_out;
};

/* sqe->cmd_op of an IORING_OP_URING_CMD on /dev/fuse. */
enum fuse_uring_cmd {
	FUSE_IO_URING_CMD_INVALID = 0,
	FUSE_IO_URING_CMD_REGISTER = 1,	      /* give an entry, wait for a request */
	FUSE_IO_URING_CMD_COMMIT_AND_FETCH = 2, /* reply, wait for the next */
};

/* In the SQE's command area (80 bytes with IORING_SETUP_SQE128). */
struct fuse_uring_cmd_req {
	uint64_t flags;
	uint64_t commit_id; /* COMMIT_AND_FETCH: the request replied to */
	uint16_t qid;	    /* the queue: one per possible CPU */
	uint8_t padding[6];
};
#endif

_Static_assert(sizeof(struct fuse_uring_ent_in_out) == 32, "7.42 ABI");
_Static_assert(sizeof(struct fuse_uring_req_header) == 288, "7.42 ABI");
_Static_assert(offsetof(struct fuse_uring_req_header, ring_ent_in_out) ==
		       256,
	       "7.42 ABI");
_Static_assert(sizeof(struct fuse_uring_cmd_req) == 24, "7.42 ABI");

#endif /* ZONEFUSE_FUSE_ABI_H */
