// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * zonefuse's own FUSE transport, under libfuse 3.14's low-level API.
 *
 * libfuse 3.14 reads a request from /dev/fuse, hands it to whichever
 * waiting thread woke first, and writes the reply back: two system calls
 * and, on a small machine, a thread wakeup per request that costs more
 * than the work. Linux 6.14 added FUSE-over-io_uring (protocol 7.42,
 * fs/fuse/dev_uring.c): the daemon gives the kernel a few buffers per
 * possible CPU, each a pending IORING_OP_URING_CMD on /dev/fuse; the
 * kernel fills one on the CPU where the request was issued, completes the
 * command, and the daemon's reply goes back with the next fetch
 * (COMMIT_AND_FETCH) in one io_uring_enter. libfuse grew that in 3.18;
 * Debian 12 has 3.14, so this file does it over two public hooks of 3.14:
 * fuse_session_custom_io() (our read/writev for the session's /dev/fuse)
 * and fuse_session_process_buf() (dispatch a request buffer to the
 * operations in fuse_ll.c).
 *
 * - INIT: the read hook notes whether the kernel offered
 *   FUSE_OVER_IO_URING (flags2, with FUSE_INIT_EXT) and INIT's unique; the
 *   writev hook sees libfuse's INIT reply and, when io_uring was chosen
 *   and the queues could be set up, sets FUSE_INIT_EXT and the flags2 bit
 *   in it (xp_init_reply(): the one place; 3.14's conn->want is 32 bits
 *   and cannot say it). From then on the kernel holds every request until
 *   every queue has an entry registered, so the queues, their buffers and
 *   their threads all exist before that reply is written, and the threads
 *   register once it has been.
 * - Requests: one thread per queue serves its ring (xp_queue_run()),
 *   pinned to the queue's CPU as libfuse 3.18 pins them (xp_pin()) but
 *   while it serves a stream of large reads, and SCHED_IDLE while the
 *   machine has idle CPU time (both xp_idle_run()). Each
 *   request is handed to fuse_session_process_buf() on that thread;
 *   zonefuse's operations reply before they return (fuse_ll.c), so a
 *   thread-local "current entry" tells the writev hook where the reply
 *   goes: the out header into the entry's header buffer, the rest into
 *   its payload buffer, then COMMIT_AND_FETCH, submitted with the
 *   thread's next wait.
 * - What the kernel still sends through /dev/fuse once the rings are up
 *   (FORGET, INTERRUPT) and anything without a current entry (INIT,
 *   replies to /dev/fuse requests) goes through the fd as before:
 *   libfuse's multi-threaded loop keeps running beside the queues.
 * - Both transports answer SYNCFS, which libfuse 3.14 answers ENOSYS, and
 *   make DESTROY wait for durability (xp_intercept()).
 * - Both take FUSE_HANDLE_KILLPRIV_V2 when the kernel offers it, which
 *   3.14 does not know (xp_init_reply()).
 *
 * When the daemon dies, the kernel aborts the connection: requests on
 * the rings end with ECONNABORTED, the mount with ENOTCONN, as with
 * /dev/fuse alone (tests/e2e/transport.py checks no process hangs).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include "xport.h"
#include "zonefuse/fuse_abi.h"
#include "zonefuse/util.h"
#include "zonefuse/zfs.h"

/*
 * Entries per queue: a second lets the kernel hand the queue a request
 * while the thread serves one (libfuse 3.18 defaults to 8; see
 * docs/performance.md for what more would buy).
 */
#define XP_DEPTH 2u
/*
 * Room before each payload buffer for the in header and the opcode's
 * header, so that a request is contiguous without moving its payload:
 * a page keeps the payload page-aligned.
 */
#define XP_HEADROOM 4096u
#define XP_STOP_TAG 1u /* user_data of the stop poll; entries are pointers */
#define XP_WAKE_TAG 2u /* user_data of the poll of a queue's wake_fd */
/*
 * Threads that serve the requests that wait for the device (xp_is_sync()):
 * one per entry of every queue, as each entry holds at most one, up to
 * this many.
 */
#define XP_SYNC_MAX 16u
#define XP_MIN_PAYLOAD 8192u /* the kernel's FUSE_MIN_READ_BUFFER */
#define XP_DEFAULT_MAX_PAGES 32u /* the kernel's, without FUSE_MAX_PAGES */

_Static_assert(sizeof(struct fuse_in_header) + FUSE_URING_OP_IN_OUT_SZ <=
		       XP_HEADROOM,
	       "headroom for the request's headers");

struct xp_queue;

struct xp_ent {
	struct xp_queue *q;
	struct fuse_uring_req_header *hdr; /* iov[0] */
	char *buf;	     /* XP_HEADROOM bytes, then the payload (iov[1]) */
	struct iovec iov[2];
	uint64_t unique;     /* of the request being served */
	uint32_t last_cmd;   /* to resubmit on EAGAIN/EINTR */
	/*
	 * A request that waits for the device (xp_is_sync()), handed to a
	 * zf-sync thread with its buffer (fb) by the queue's thread: from
	 * then until the queue's thread takes it off the done list, the
	 * entry is that thread's alone, and its reply is committed by the
	 * queue's thread (xp_send()).
	 */
	bool sync;
	struct fuse_buf fb;
	struct xp_ent *next; /* on the sync list or its queue's done list */
};

/* A ring and its entries: touched only by its own thread once started. */
struct xp_queue {
	struct xp *xp;
	unsigned int qid;
	pthread_t thread;
	bool ring_up, thread_up;
	struct io_uring ring;
	struct xp_ent ent[XP_DEPTH];
	/* Replies and their payload bytes: its thread adds, zf-sched reads. */
	_Atomic uint64_t replies, reply_bytes;
	/*
	 * Entries whose reply a zf-sync thread wrote, for the queue's thread
	 * to commit (only it touches the ring): the thread pushes one and
	 * writes wake_fd, which the ring polls.
	 */
	int wake_fd;
	pthread_mutex_t done_lock; /* protects done; taken alone */
	struct xp_ent *done;
	bool idle;   /* SCHED_IDLE now: zf-sched's alone */
	bool spread; /* unpinned now (xp_pin()): zf-sched's alone */
};

struct xp {
	struct fuse_session *se;
	struct zfs *fs;
	enum xp_choice choice;
	bool uring_wanted; /* set at create, read-only after */
	bool idle_wanted;  /* xp_set_idle(); read-only once the queues run */
	int fd;		   /* the session's /dev/fuse, from xp_attach() */
	int stop_fd;	   /* eventfd: the queues' threads stop when readable */

	/*
	 * Written by the /dev/fuse thread that reads INIT, read by the one
	 * that writes its reply (libfuse's threads): atomics.
	 */
	_Atomic uint64_t init_unique;
	atomic_bool offered;	  /* FUSE_OVER_IO_URING */
	atomic_bool offered_kp2; /* FUSE_HANDLE_KILLPRIV_V2 */

	/*
	 * The queues: written by xp_init_reply() before the go (go_lock
	 * orders it before the threads' reads), read-only while they run,
	 * freed after they are joined. Each queue's ring and entries are
	 * its own thread's alone.
	 */
	struct xp_queue *q;
	unsigned int nr_q;
	size_t payload;

	pthread_mutex_t go_lock;
	pthread_cond_t go_cv;
	int go;		/* protected by go_lock: 0 wait, 1 register, -1 quit */
	atomic_bool reg_failed;

	/*
	 * The thread that sets the queue threads' policy (xp_idle_run());
	 * created and joined with the queues.
	 */
	pthread_t idle_thread;
	bool idle_up;

	/*
	 * The zf-sync threads (xp_sync_run()), created and joined with the
	 * queues, and the requests they wait for, oldest first.
	 */
	pthread_t sync_thread[XP_SYNC_MAX];
	unsigned int nr_sync;
	pthread_mutex_t sync_lock; /* protects sync_head, sync_tail,
				      sync_stop; taken alone */
	pthread_cond_t sync_cv;
	struct xp_ent *sync_head, *sync_tail;
	bool sync_stop;
};

/* The ring entry whose request this thread serves (NULL: none). */
static _Thread_local struct xp_ent *xp_cur;

int xp_parse(const char *s, enum xp_choice *c)
{
	if (!strcmp(s, "auto"))
		*c = XP_AUTO;
	else if (!strcmp(s, "dev"))
		*c = XP_DEV;
	else if (!strcmp(s, "uring"))
		*c = XP_URING;
	else
		return -EINVAL;
	return 0;
}

/* What serves requests now, for the stats ("dev" or "uring"). */
static void xp_set_name(struct xp *xp, const char *name)
{
	zfs_set_transport(xp->fs, name);
}

/*
 * The fuse module's io_uring switch: 1 on, 0 off, -ENOENT when the
 * kernel has no FUSE-over-io_uring (before 6.14, or built without it).
 */
static int xp_uring_param(void)
{
	char v[8];

	if (zutil_read_line("/sys/module/fuse/parameters/enable_uring", v,
			    sizeof(v)))
		return -ENOENT;
	return v[0] == 'Y' || v[0] == '1';
}

/*
 * The kernel makes one queue per possible CPU (num_possible_cpus()) and
 * uses none until each has an entry: count them as it does, from
 * /sys/devices/system/cpu/possible ("0-3", "0,2-5"), not the online CPUs.
 */
static unsigned int xp_possible_cpus(void)
{
	char line[256], *p, *end;
	unsigned long a, b, max = 0;
	long n;

	if (!zutil_read_line("/sys/devices/system/cpu/possible", line,
			     sizeof(line))) {
		for (p = line; *p; p = end) {
			a = strtoul(p, &end, 10);
			b = a;
			if (*end == '-')
				b = strtoul(end + 1, &end, 10);
			max = ZF_MAX(max, b + 1);
			if (*end == ',')
				end++;
			else if (*end != '\0')
				break;
		}
	}
	if (max)
		return (unsigned int)max;
	n = sysconf(_SC_NPROCESSORS_CONF);
	return n > 0 ? (unsigned int)n : 1;
}

/* ---- the ring side ------------------------------------------------------- */

/*
 * An SQE of @q's ring. There is one per entry plus the stop poll and the
 * wake poll, and the ring has room for all, so there always is one: none
 * is a bug.
 */
static struct io_uring_sqe *xp_sqe(struct xp_queue *q)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);

	if (!sqe) {
		io_uring_submit(&q->ring);
		sqe = io_uring_get_sqe(&q->ring);
		if (!sqe) {
			zlog_err("internal error: transport queue %u has no SQE free",
				 q->qid);
			abort();
		}
	}
	return sqe;
}

/* Queue @cmd for @e. */
static void xp_queue_cmd(struct xp_ent *e, uint32_t cmd)
{
	struct xp_queue *q = e->q;
	struct io_uring_sqe *sqe = xp_sqe(q);
	struct fuse_uring_cmd_req *req;

	memset(sqe, 0, 2 * sizeof(*sqe)); /* an SQE128 */
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->flags = IOSQE_FIXED_FILE;
	sqe->fd = 0; /* the registered /dev/fuse */
	sqe->cmd_op = cmd;
	sqe->user_data = (uint64_t)(uintptr_t)e;
	if (cmd == FUSE_IO_URING_CMD_REGISTER) {
		sqe->addr = (uint64_t)(uintptr_t)e->iov;
		sqe->len = 2;
	}
	req = (struct fuse_uring_cmd_req *)sqe->cmd;
	req->qid = (uint16_t)q->qid;
	req->commit_id = cmd == FUSE_IO_URING_CMD_COMMIT_AND_FETCH ? e->unique :
								     0;
	e->last_cmd = cmd;
}

/*
 * Send @e's reply, which is in its buffers: commit it and fetch the next
 * request, or, from a zf-sync thread, leave that to the queue's thread.
 */
static void xp_send(struct xp_ent *e)
{
	struct xp_queue *q = e->q;
	uint64_t one = 1;

	if (!e->sync) {
		xp_queue_cmd(e, FUSE_IO_URING_CMD_COMMIT_AND_FETCH);
		return;
	}
	pthread_mutex_lock(&q->done_lock);
	e->next = q->done;
	q->done = e;
	pthread_mutex_unlock(&q->done_lock);
	if (write(q->wake_fd, &one, sizeof(one)) < 0)
		zlog_err("transport: cannot wake io_uring queue %u for a reply: %s",
			 q->qid, strerror(errno));
}

/* The queue's thread: commit the replies zf-sync threads left. */
static void xp_send_done(struct xp_queue *q)
{
	struct xp_ent *e, *next;
	uint64_t n;

	if (read(q->wake_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		zlog_err("transport: io_uring queue %u: reading its wake fd: %s",
			 q->qid, strerror(errno));
	pthread_mutex_lock(&q->done_lock);
	e = q->done;
	q->done = NULL;
	pthread_mutex_unlock(&q->done_lock);
	for (; e; e = next) {
		next = e->next;
		e->sync = false;
		xp_queue_cmd(e, FUSE_IO_URING_CMD_COMMIT_AND_FETCH);
	}
}

/* Poll @q's wake_fd: a completion when a zf-sync thread left a reply. */
static void xp_arm_wake(struct xp_queue *q)
{
	struct io_uring_sqe *sqe = xp_sqe(q);

	io_uring_prep_poll_add(sqe, q->wake_fd, POLLIN);
	sqe->user_data = XP_WAKE_TAG;
}

/* The reply of @e's request, from the writev hook: copy and commit. */
static ssize_t xp_commit(struct xp_ent *e, const struct iovec *iov, int count)
{
	struct fuse_out_header out;
	char *payload = e->buf + XP_HEADROOM;
	size_t len = 0, total = iov[0].iov_len;
	int i;

	memcpy(&out, iov[0].iov_base, sizeof(out));
	for (i = 1; i < count; i++) {
		total += iov[i].iov_len;
		if (len + iov[i].iov_len > e->q->xp->payload) {
			zlog_err("transport: a reply of %zu bytes does not fit the ring's %zu",
				 total, e->q->xp->payload);
			out.error = -EIO;
			len = 0;
			break;
		}
		if (iov[i].iov_base != payload + len)
			memcpy(payload + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	out.len = (uint32_t)(sizeof(out) + len);
	memcpy(e->hdr->in_out, &out, sizeof(out));
	e->hdr->ring_ent_in_out.payload_sz = (uint32_t)len;
	atomic_fetch_add_explicit(&e->q->replies, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&e->q->reply_bytes, len,
				  memory_order_relaxed);
	xp_cur = NULL;
	xp_send(e);
	return (ssize_t)total;
}

static bool xp_intercept(struct xp *xp, const struct fuse_in_header *in);

void *xp_reply_buf(size_t size)
{
	struct xp_ent *e = xp_cur;

	return e && size <= e->q->xp->payload ? e->buf + XP_HEADROOM : NULL;
}

/*
 * Requests that wait for the device: an fsync writes its file's data and
 * commits, a syncfs everything. On the queue's thread they would hold
 * every request from that CPU behind them: a dataloader's reads behind a
 * checkpoint's fsync (docs/design.md, "Transport"). They go to zf-sync
 * threads. Everything else is answered from memory or waits only briefly.
 * The queue's thread may put the next request into the entry as soon as
 * the reply is handed back, so an opcode served there must not touch its
 * request after replying: these read their arguments before they start.
 */
static bool xp_is_sync(uint32_t opcode)
{
	return opcode == FUSE_FSYNC || opcode == FUSE_FSYNCDIR ||
	       opcode == FUSE_SYNCFS;
}

/*
 * Hand @e's request (in e->fb) to the operations, and see it answered.
 * Once answered, the entry is not this thread's any more (a zf-sync
 * thread's reply goes to the queue's thread, which may have the next
 * request in it already): xp_commit() clearing xp_cur says it was.
 */
static void xp_dispatch(struct xp_ent *e)
{
	struct xp *xp = e->q->xp;
	struct fuse_in_header in;

	memcpy(&in, e->fb.mem, sizeof(in));
	xp_cur = e;
	if (!xp_intercept(xp, &in))
		fuse_session_process_buf(xp->se, &e->fb);
	if (xp_cur == e) {
		/*
		 * fuse_ll.c replies before it returns; a request left without
		 * one would hold this entry (and the caller) for good.
		 */
		struct fuse_out_header out = { .unique = e->unique,
					       .error = -EIO };
		struct iovec iov = { &out, sizeof(out) };

		zlog_err("transport: opcode %u was not answered on its thread: replying EIO",
			 in.opcode);
		xp_commit(e, &iov, 1);
	}
}

/*
 * Serve the request the kernel put in @e. The kernel wrote the in header
 * to hdr->in_out, the opcode's own header (in_args[0], empty for some
 * opcodes) to hdr->op_in and the rest (names, write data) to the payload;
 * in.len counts all three, so the opcode's header is in.len less the
 * other two: no table of sizes, which would differ with what INIT
 * negotiated (setxattr's, for one). Copying the two headers to just
 * before the payload, into the entry's headroom, gives the contiguous
 * request /dev/fuse would have given, with no copy of the payload.
 */
static void xp_serve(struct xp_ent *e)
{
	struct xp *xp = e->q->xp;
	struct fuse_in_header in;
	size_t pay = e->hdr->ring_ent_in_out.payload_sz, op;
	char *start;

	memcpy(&in, e->hdr->in_out, sizeof(in));
	e->unique = e->hdr->ring_ent_in_out.commit_id;
	e->sync = false;
	op = in.len - sizeof(in) - pay;
	if (in.len < sizeof(in) + pay || op > FUSE_URING_OP_IN_OUT_SZ ||
	    pay > xp->payload) {
		struct fuse_out_header out = { .unique = e->unique,
					       .error = -EIO };
		struct iovec iov = { &out, sizeof(out) };

		zlog_err("transport: request %" PRIu64 " (opcode %u) has len %u, payload %zu: replying EIO",
			 e->unique, in.opcode, in.len, pay);
		xp_commit(e, &iov, 1);
		return;
	}
	start = e->buf + XP_HEADROOM - op - sizeof(in);
	memcpy(start, &in, sizeof(in));
	memcpy(start + sizeof(in), e->hdr->op_in, op);
	e->fb = (struct fuse_buf){ .mem = start, .size = in.len };
	e->sync = xp->nr_sync && xp_is_sync(in.opcode);
	if (e->sync) {
		pthread_mutex_lock(&xp->sync_lock);
		e->next = NULL;
		if (xp->sync_tail)
			xp->sync_tail->next = e;
		else
			xp->sync_head = e;
		xp->sync_tail = e;
		pthread_cond_signal(&xp->sync_cv);
		pthread_mutex_unlock(&xp->sync_lock);
		return;
	}
	xp_dispatch(e);
}

/* Wait for the go from xp_init_reply(): true to register, false to quit. */
static bool xp_wait_go(struct xp *xp)
{
	int go;

	pthread_mutex_lock(&xp->go_lock);
	while (!xp->go)
		pthread_cond_wait(&xp->go_cv, &xp->go_lock);
	go = xp->go;
	pthread_mutex_unlock(&xp->go_lock);
	return go > 0;
}

/* A REGISTER the kernel refused: it falls back to /dev/fuse by itself. */
static void xp_register_failed(struct xp_queue *q, int err)
{
	struct xp *xp = q->xp;

	if (atomic_exchange(&xp->reg_failed, true))
		return;
	zlog_warn("transport: io_uring queue %u refused (%s): requests stay on /dev/fuse",
		  q->qid, strerror(-err));
	xp_set_name(xp, "dev");
}

/*
 * Pin queue thread t to its queue's CPU (wide NULL), or let it run on any
 * CPU in wide. The kernel puts a
 * request on the queue of the CPU that issued it, so the thread that
 * serves it wakes on the core where the caller now sleeps: no wakeup
 * across cores, and the caller's data still in that core's cache. Paired
 * runs on 2 cores (docs/performance.md, "Pinning the queues"): 4 KiB
 * psync random reads with 4 threads 1.6-2.2x, unlinks 1.5-1.7x; but one
 * thread that keeps 16 reads in flight without sleeping competes with
 * the thread that serves it for one core, at half the rate, and so does
 * a reader streaming a file through readahead (xp_idle_run() unpins the
 * queues that serve such a reader). A CPU the
 * daemon may not run on (cpuset, taskset, offline) leaves that queue's
 * thread unpinned: no request comes from there anyway, or, if the
 * kernel's CPU numbering and ours disagree, it is served unpinned.
 */
static int xp_pin(const struct xp_queue *q, pthread_t t, const cpu_set_t *wide)
{
	cpu_set_t set;

	if (wide)
		return -pthread_setaffinity_np(t, sizeof(*wide), wide);
	CPU_ZERO(&set);
	CPU_SET(q->qid, &set);
	return -pthread_setaffinity_np(t, sizeof(set), &set);
}

/*
 * Where the caller goes when its request is answered. A queue thread
 * pinned beside the caller answers while it still runs on the caller's
 * CPU, so the scheduler wakes the caller on another CPU if one is idle
 * (select_idle_sibling()): on a quiet machine, one thread reading a
 * block at a time moved CPU on 80 % of its reads (perf, sched_migrate_task
 * from fuse_readpages_end()), paying an interrupt to wake the other CPU
 * each time, and its next request went to the other CPU's queue. With the
 * queue threads SCHED_IDLE, a CPU that runs only them counts as idle, so
 * the caller stays and preempts the queue thread at once: 4 KiB psync
 * reads from one thread 28-35k -> 80-112k IOPS, create+write+close 8.6k
 * -> 22.9k files/s (docs/performance.md, "The queue threads' policy").
 * But SCHED_IDLE threads get almost no time while other work wants the
 * CPUs: under `stress-ng --cpu 2` unlinks ran at 5.9k/s instead of
 * 32.8k, and the caller does not move then anyway (no idle CPU). So the
 * policy follows the machine: SCHED_IDLE while at least XP_IDLE_ON of its
 * CPU time went idle over the last XP_IDLE_MS, SCHED_OTHER as soon as
 * less than XP_IDLE_OFF did (/proc/stat sums every CPU's idle and iowait
 * time). And it follows the queue: a caller streaming a file through
 * readahead does not wait for each request, so a SCHED_IDLE thread serves
 * its queue only when the caller runs out of pages (cold 1 MiB reads
 * 12 % slower), and a pinned one shares the caller's CPU with it while
 * the other CPU idles: the readahead's READs come from the caller's CPU,
 * one queue gets them all, and the kernel's copy of each reply into the
 * page cache runs in that queue's commit (cold 1 MiB reads 1.6-1.9 GB/s
 * pinned, 2.2-2.7 unpinned, docs/performance.md). A queue whose replies
 * averaged XP_STREAM_BYTES or more over the interval runs SCHED_OTHER on
 * any CPU, and is pinned again once they do not.
 * Going back to SCHED_OTHER needs CAP_SYS_NICE (or RLIMIT_NICE 20): a
 * daemon without it keeps SCHED_OTHER, checked on this thread first; it
 * still spreads streaming queues, as `-o uring_sched=normal` does.
 */
#define XP_IDLE_MS 100
#define XP_IDLE_ON 0.30
#define XP_IDLE_OFF 0.15
#define XP_STREAM_BYTES (128u << 10)

/*
 * The machine's idle CPU time so far (all CPUs), in seconds; < 0:
 * unknown. Idle and iowait both: a CPU whose only task sleeps in
 * io_uring_enter() with commands in flight, as our queue threads do,
 * counts as iowait.
 */
static double xp_idle_seconds(void)
{
	unsigned long long v[5];
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f = fopen("/proc/stat", "re");
	int n;

	if (!f)
		return -1;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
		   &v[3], &v[4]);
	fclose(f);
	return n == 5 && hz > 0 ? (double)(v[3] + v[4]) / (double)hz : -1;
}

static int xp_policy_set(pthread_t t, int policy)
{
	struct sched_param sp = { .sched_priority = 0 };

	return -pthread_setschedparam(t, policy, &sp);
}

static void *xp_idle_run(void *arg)
{
	struct xp *xp = arg;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	double idle0 = xp_idle_seconds(), idle1, frac;
	uint64_t t0 = zutil_now_mono_ns(), t1;
	struct pollfd pfd = { .fd = xp->stop_fd, .events = POLLIN };
	bool policy = xp->idle_wanted, spread = true, idle = false, stream;
	bool qwant;
	uint64_t *seen = calloc(2 * (size_t)xp->nr_q, sizeof(*seen));
	cpu_set_t wide;
	unsigned int i;
	int n, ret = 0;

	if (!xp_wait_go(xp))
		goto out;
	pthread_setname_np(pthread_self(), "zf-sched");
	if (!seen) {
		zlog_info("transport: io_uring queue threads stay SCHED_OTHER and pinned (no memory)");
		goto out;
	}
	if (sched_getaffinity(0, sizeof(wide), &wide)) {
		zlog_debug("transport: io_uring queues stay pinned: %s",
			   strerror(errno));
		spread = false;
	}
	if (policy) {
		ret = xp_policy_set(pthread_self(), SCHED_IDLE);
		if (!ret)
			ret = xp_policy_set(pthread_self(), SCHED_OTHER);
	}
	if (policy && (ret || idle0 < 0 || ncpu < 2)) {
		zlog_info("transport: io_uring queue threads stay SCHED_OTHER (%s)",
			  ret ? "cannot return from SCHED_IDLE without CAP_SYS_NICE" :
			  ncpu < 2 ? "one CPU" : "no /proc/stat");
		policy = false;
	}
	if (!policy && !spread)
		goto out;
	for (;;) {
		n = poll(&pfd, 1, XP_IDLE_MS);
		if (n > 0 || (n < 0 && errno != EINTR))
			break; /* stopping */
		frac = 0;
		if (policy) {
			idle1 = xp_idle_seconds();
			t1 = zutil_now_mono_ns();
			if (idle1 < 0 || t1 <= t0)
				continue;
			frac = (idle1 - idle0) * 1e9 /
			       ((double)(t1 - t0) * (double)ncpu);
			idle0 = idle1;
			t0 = t1;
			idle = idle ? frac >= XP_IDLE_OFF : frac >= XP_IDLE_ON;
		}
		for (i = 0; i < xp->nr_q; i++) {
			struct xp_queue *q = &xp->q[i];
			uint64_t r = atomic_load_explicit(&q->replies,
							  memory_order_relaxed);
			uint64_t b = atomic_load_explicit(&q->reply_bytes,
							  memory_order_relaxed);

			stream = r != seen[2 * i] &&
				 (b - seen[2 * i + 1]) / (r - seen[2 * i]) >=
					 XP_STREAM_BYTES;
			seen[2 * i] = r;
			seen[2 * i + 1] = b;
			if (spread && stream != q->spread) {
				ret = xp_pin(q, q->thread, stream ? &wide : NULL);
				if (ret && ret != -ESRCH) /* ESRCH: it has quit */
					zlog_debug("transport: io_uring queue %u: cannot %s: %s",
						   i, stream ? "unpin" : "pin",
						   strerror(-ret));
				q->spread = stream;
				zlog_debug("transport: queue %u %s", i,
					   stream ? "streams: any CPU" :
						    "pinned");
			}
			qwant = policy && idle && !stream;
			if (qwant == q->idle)
				continue;
			ret = xp_policy_set(q->thread,
					    qwant ? SCHED_IDLE : SCHED_OTHER);
			if (ret && ret != -ESRCH)
				zlog_warn("transport: io_uring queue %u: cannot set %s: %s",
					  i, qwant ? "SCHED_IDLE" : "SCHED_OTHER",
					  strerror(-ret));
			q->idle = qwant;
			zlog_debug("transport: queue %u %s (%.0f %% idle)", i,
				   qwant ? "SCHED_IDLE" : "SCHED_OTHER",
				   frac * 100);
		}
	}
	for (i = 0; i < xp->nr_q; i++)
		if (xp->q[i].idle)
			xp_policy_set(xp->q[i].thread, SCHED_OTHER);
out:
	free(seen);
	return NULL;
}

/*
 * A zf-sync thread: serve the requests the queues' threads hand over
 * (xp_serve()), oldest first, until told to stop; a request still on the
 * list then is not served: its connection is going.
 */
static void *xp_sync_run(void *arg)
{
	struct xp *xp = arg;
	struct xp_ent *e;

	pthread_setname_np(pthread_self(), "zf-sync");
	for (;;) {
		pthread_mutex_lock(&xp->sync_lock);
		while (!xp->sync_head && !xp->sync_stop)
			pthread_cond_wait(&xp->sync_cv, &xp->sync_lock);
		if (xp->sync_stop) {
			pthread_mutex_unlock(&xp->sync_lock);
			return NULL;
		}
		e = xp->sync_head;
		xp->sync_head = e->next;
		if (!xp->sync_head)
			xp->sync_tail = NULL;
		pthread_mutex_unlock(&xp->sync_lock);
		xp_dispatch(e);
	}
}

static void *xp_queue_run(void *arg)
{
	struct xp_queue *q = arg;
	struct xp *xp = q->xp;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	unsigned int i, head, seen;
	bool stop = false;
	char name[16];
	int ret;

	if (!xp_wait_go(xp))
		return NULL;
	/* zf-uring-CPU, for top -H and tests/e2e/transport.py. */
	snprintf(name, sizeof(name), "zf-uring-%u", q->qid);
	pthread_setname_np(pthread_self(), name);
	ret = xp_pin(q, pthread_self(), NULL);
	if (ret)
		zlog_debug("transport: io_uring queue %u not pinned: %s", q->qid,
			   strerror(-ret));
	for (i = 0; i < XP_DEPTH; i++)
		xp_queue_cmd(&q->ent[i], FUSE_IO_URING_CMD_REGISTER);
	sqe = xp_sqe(q);
	io_uring_prep_poll_add(sqe, xp->stop_fd, POLLIN);
	sqe->user_data = XP_STOP_TAG;
	xp_arm_wake(q);

	while (!stop && !fuse_session_exited(xp->se)) {
		ret = io_uring_submit_and_wait(&q->ring, 1);
		if (ret < 0 && ret != -EINTR) {
			zlog_err("transport: io_uring queue %u: %s", q->qid,
				 strerror(-ret));
			break;
		}
		seen = 0;
		io_uring_for_each_cqe(&q->ring, head, cqe) {
			struct xp_ent *e;

			seen++;
			if (cqe->user_data == XP_STOP_TAG) {
				stop = true;
				continue;
			}
			if (cqe->user_data == XP_WAKE_TAG) {
				if (stop)
					continue;
				if (cqe->res < 0)
					zlog_err("transport: io_uring queue %u: polling its wake fd: %s",
						 q->qid, strerror(-cqe->res));
				xp_send_done(q);
				xp_arm_wake(q);
				continue;
			}
			e = (struct xp_ent *)(uintptr_t)cqe->user_data;
			if (!cqe->res) {
				if (!stop)
					xp_serve(e);
				continue;
			}
			switch (cqe->res) {
			case -EAGAIN:
			case -EINTR:
				xp_queue_cmd(e, e->last_cmd);
				break;
			case -ENOTCONN:
			case -ECONNABORTED:
			case -ECANCELED:
				stop = true; /* the connection is gone */
				break;
			default:
				if (e->last_cmd == FUSE_IO_URING_CMD_REGISTER)
					xp_register_failed(q, cqe->res);
				else
					zlog_err("transport: io_uring queue %u: commit failed: %s",
						 q->qid, strerror(-cqe->res));
				stop = true;
				break;
			}
		}
		io_uring_cq_advance(&q->ring, seen);
	}
	return NULL;
}

/* Free what xp_queues_setup() made; the threads have been joined. */
static void xp_queues_free(struct xp *xp)
{
	unsigned int i, j;

	for (i = 0; xp->q && i < xp->nr_q; i++) {
		struct xp_queue *q = &xp->q[i];

		if (q->ring_up)
			io_uring_queue_exit(&q->ring);
		if (q->wake_fd >= 0)
			close(q->wake_fd);
		pthread_mutex_destroy(&q->done_lock);
		for (j = 0; j < XP_DEPTH; j++) {
			free(q->ent[j].hdr);
			free(q->ent[j].buf);
		}
	}
	free(xp->q);
	xp->q = NULL;
	xp->nr_q = 0;
}

/* Tell the threads to quit (or never start) and wait for them. */
static void xp_queues_stop(struct xp *xp, int why)
{
	uint64_t one = 1;
	unsigned int i;

	pthread_mutex_lock(&xp->go_lock);
	if (xp->go <= 0)
		xp->go = why;
	pthread_cond_broadcast(&xp->go_cv);
	pthread_mutex_unlock(&xp->go_lock);
	if (write(xp->stop_fd, &one, sizeof(one)) < 0)
		zlog_warn("transport: cannot wake the io_uring queues: %s",
			  strerror(errno));
	if (xp->idle_up)
		pthread_join(xp->idle_thread, NULL);
	xp->idle_up = false;
	for (i = 0; xp->q && i < xp->nr_q; i++) {
		if (xp->q[i].thread_up)
			pthread_join(xp->q[i].thread, NULL);
		xp->q[i].thread_up = false;
	}
	/* After the queues: no entry is handed over any more. */
	pthread_mutex_lock(&xp->sync_lock);
	xp->sync_stop = true;
	pthread_cond_broadcast(&xp->sync_cv);
	pthread_mutex_unlock(&xp->sync_lock);
	for (i = 0; i < xp->nr_sync; i++)
		pthread_join(xp->sync_thread[i], NULL);
	xp->nr_sync = 0;
	xp->sync_head = xp->sync_tail = NULL;
}

/*
 * Everything the queues need, before the INIT reply promises them: a
 * ring per queue (SQE128: the command's arguments live in the SQE's big
 * half, which dev_uring.c checks; it does not need CQE32, and libfuse
 * does not ask for it), the entries' buffers, the threads (waiting for
 * the go). Returns 0 or -errno with nothing left behind.
 */
static int xp_queues_setup(struct xp *xp, size_t payload)
{
	unsigned int i, j, nr = xp_possible_cpus();
	int ret;

	xp->q = calloc(nr, sizeof(*xp->q));
	if (!xp->q)
		return -ENOMEM;
	xp->nr_q = nr;
	xp->payload = payload;
	for (i = 0; i < nr; i++) {
		xp->q[i].wake_fd = -1;
		pthread_mutex_init(&xp->q[i].done_lock, NULL);
	}
	for (i = 0; i < nr; i++) {
		struct xp_queue *q = &xp->q[i];
		struct io_uring_params p = { .flags = IORING_SETUP_SQE128 };

		q->xp = xp;
		q->qid = i;
		q->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (q->wake_fd < 0) {
			ret = -errno;
			goto out_free;
		}
		/* An SQE per entry, the stop poll, the wake poll. */
		ret = io_uring_queue_init_params(XP_DEPTH + 2, &q->ring, &p);
		if (ret)
			goto out_free;
		q->ring_up = true;
		ret = io_uring_register_files(&q->ring, &xp->fd, 1);
		if (ret)
			goto out_free;
		for (j = 0; j < XP_DEPTH; j++) {
			struct xp_ent *e = &q->ent[j];

			e->q = q;
			ret = -posix_memalign((void **)&e->hdr, 4096,
					      sizeof(*e->hdr));
			if (!ret)
				ret = -posix_memalign((void **)&e->buf, 4096,
						      XP_HEADROOM + payload);
			if (ret)
				goto out_free;
			memset(e->hdr, 0, sizeof(*e->hdr));
			e->iov[0].iov_base = e->hdr;
			e->iov[0].iov_len = sizeof(*e->hdr);
			e->iov[1].iov_base = e->buf + XP_HEADROOM;
			e->iov[1].iov_len = payload;
		}
	}
	xp->sync_stop = false;
	while (xp->nr_sync < ZF_MIN(nr * XP_DEPTH, XP_SYNC_MAX)) {
		ret = -pthread_create(&xp->sync_thread[xp->nr_sync], NULL,
				      xp_sync_run, xp);
		if (ret)
			goto out_stop;
		xp->nr_sync++;
	}
	for (i = 0; i < nr; i++) {
		ret = -pthread_create(&xp->q[i].thread, NULL, xp_queue_run,
				      &xp->q[i]);
		if (ret)
			goto out_stop;
		xp->q[i].thread_up = true;
	}
	if (nr > 1) {
		ret = -pthread_create(&xp->idle_thread, NULL, xp_idle_run, xp);
		if (ret)
			goto out_stop;
		xp->idle_up = true;
	}
	return 0;

out_stop:
	xp_queues_stop(xp, -1);
out_free:
	xp_queues_free(xp);
	return ret;
}

/* ---- the /dev/fuse side -------------------------------------------------- */

/*
 * The payload the kernel will put in a ring entry, from our INIT reply:
 * max(FUSE_MIN_READ_BUFFER, max_write, max_pages pages), as
 * fuse_uring_create() computes it (the kernel only lowers max_pages).
 */
static size_t xp_payload_size(const struct fuse_init_out *a)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t pages = a->flags & FUSE_MAX_PAGES ? ZF_MAX(a->max_pages, 1u) :
						   XP_DEFAULT_MAX_PAGES;

	return ZF_MAX(ZF_MAX((size_t)XP_MIN_PAYLOAD, (size_t)a->max_write),
		      pages * page);
}

/*
 * libfuse's INIT reply, on its way to the kernel: the one place the
 * transport is settled. io_uring when it was wanted, the kernel offered
 * it and the queues are ready, and then the reply says so; otherwise
 * /dev/fuse, with the reason logged.
 *
 * The reply also takes FUSE_HANDLE_KILLPRIV_V2 when offered. Without it
 * the kernel marks no inode of a FUSE mount "no security attributes"
 * (SB_NOSEC, S_NOSEC), so every write(2) through the page cache first
 * asked the daemon for security.capability (file_remove_privs()): a
 * GETXATTR round trip per write, answered EOPNOTSUPP each time. With it
 * the kernel asks once per inode. What V2 hands the daemon it already
 * does: zfs_write() and a truncate clear set-user-ID and set-group-ID as
 * the kernel would (zfs_kill_suid(), by the caller's uid: 3.14 drops the
 * kernel's FUSE_WRITE_KILL_SUIDGID hint, as it drops FATTR_KILL_SUIDGID),
 * so does a chown (zfs_setattr()), and there are no file capabilities to
 * remove (only user.* attributes are kept). tests/e2e/perms.py checks the
 * result against ext4; one writer's 4 KiB writes through the page cache
 * went from 67-70 to 126-134 MB/s with it (docs/performance.md).
 */
static ssize_t xp_init_reply(struct xp *xp, int fd, struct iovec *iov,
			     int count)
{
	const struct fuse_out_header *out = iov[0].iov_base;
	struct fuse_init_out *a = count > 1 ? iov[1].iov_base : NULL;
	char why[160] = "";
	bool uring = false;
	ssize_t n;
	int ret;

	atomic_store(&xp->init_unique, 0);
	if (!xp->uring_wanted) {
		snprintf(why, sizeof(why), "%s",
			 xp->choice == XP_DEV ?
				 "transport=dev" :
				 "the fuse module's enable_uring is off or missing");
	} else if (!atomic_load(&xp->offered)) {
		snprintf(why, sizeof(why),
			 "the kernel did not offer FUSE_OVER_IO_URING at INIT");
	} else if (out->error || !a ||
		   iov[1].iov_len < offsetof(struct fuse_init_out, flags2) +
					    sizeof(a->flags2)) {
		snprintf(why, sizeof(why), "INIT failed or is too old");
	} else {
		ret = xp_queues_setup(xp, xp_payload_size(a));
		if (ret)
			snprintf(why, sizeof(why),
				 "cannot set up the io_uring queues: %s",
				 strerror(-ret));
		uring = !ret;
	}
	if (a && !out->error && atomic_load(&xp->offered_kp2))
		a->flags |= FUSE_HANDLE_KILLPRIV_V2;
	if (uring) {
		a->flags |= FUSE_INIT_EXT;
		a->flags2 |= (uint32_t)(FUSE_OVER_IO_URING >> 32);
	}
	n = writev(fd, iov, count);
	if (uring && n < 0) {
		ret = errno;
		xp_queues_stop(xp, -1);
		xp_queues_free(xp);
		errno = ret;
		return n;
	}
	if (!uring) {
		if (xp->choice == XP_URING) {
			zlog_err("transport: io_uring was asked for (transport=uring) but %s: stopping",
				 why);
			fuse_session_exit(xp->se);
		} else {
			zlog_info("transport: /dev/fuse (%s)", why);
		}
		return n;
	}
	xp_set_name(xp, "uring");
	zlog_info("transport: io_uring, %u queues of %u entries, %zu KiB payload (%s)",
		  xp->nr_q, XP_DEPTH, xp->payload >> 10,
		  xp->choice == XP_URING ? "transport=uring" :
					   "the kernel offered it");
	pthread_mutex_lock(&xp->go_lock);
	xp->go = 1;
	pthread_cond_broadcast(&xp->go_cv);
	pthread_mutex_unlock(&xp->go_lock);
	return n;
}

/*
 * Every reply and notification libfuse sends: to the ring entry it
 * answers when this thread serves one, else to /dev/fuse.
 */
static ssize_t xp_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct xp *xp = ((struct fs_ll *)userdata)->xp;
	const struct fuse_out_header *out = iov[0].iov_base;
	uint64_t init = atomic_load(&xp->init_unique);

	if (xp_cur && out->unique == xp_cur->unique)
		return xp_commit(xp_cur, iov, count);
	if (init && out->unique == init)
		return xp_init_reply(xp, fd, iov, count);
	return writev(fd, iov, count);
}

/* An error (or 0) reply to @unique, by whichever way requests come. */
static void xp_reply_err(struct xp *xp, uint64_t unique, int err)
{
	struct fuse_out_header out = { .len = sizeof(out),
				       .error = err,
				       .unique = unique };
	struct iovec iov = { &out, sizeof(out) };

	if (xp_cur)
		xp_commit(xp_cur, &iov, 1);
	else if (writev(xp->fd, &iov, 1) < 0 && errno != ENOENT)
		zlog_warn("transport: cannot reply to request %" PRIu64 ": %s",
			  unique, strerror(errno));
}

/*
 * The requests libfuse 3.14 would get wrong, handled before it sees them
 * (docs/design.md, "Transport"). Returns true when it replied.
 * - SYNCFS (sync(1), syncfs(2); the kernel sends it to fuseblk mounts
 *   only): 3.14 answers ENOSYS. Everything written before it is made
 *   durable, as an fsync of every file would.
 * - DESTROY (umount of a fuseblk mount, which waits for the reply): made
 *   durable first, then libfuse answers it; a plain FUSE mount is not
 *   sent one.
 */
static bool xp_intercept(struct xp *xp, const struct fuse_in_header *in)
{
	int ret;

	switch (in->opcode) {
	case FUSE_SYNCFS:
		ret = zfs_sync(xp->fs);
		if (ret)
			zlog_err("transport: syncfs: %s", strerror(-ret));
		xp_reply_err(xp, in->unique, ret);
		return true;
	case FUSE_DESTROY:
		ret = zfs_sync(xp->fs);
		if (ret)
			zlog_err("transport: making the file system durable at unmount: %s",
				 strerror(-ret));
		return false;
	default:
		return false;
	}
}

/*
 * libfuse's read of /dev/fuse. INIT is noted on its way in (the offer
 * and its unique, for xp_init_reply()); SYNCFS is answered here and the
 * read goes on, so libfuse never sees it.
 */
static ssize_t xp_read(int fd, void *buf, size_t len, void *userdata)
{
	struct xp *xp = ((struct fs_ll *)userdata)->xp;
	const struct fuse_in_header *in = buf;
	ssize_t n;

	for (;;) {
		n = read(fd, buf, len);
		if (n < (ssize_t)sizeof(*in))
			return n;
		if (in->opcode == FUSE_INIT &&
		    (size_t)n >= sizeof(*in) + sizeof(struct fuse_init_in)) {
			const struct fuse_init_in *a =
				(const void *)((const char *)buf + sizeof(*in));
			bool offer = (a->flags & FUSE_INIT_EXT) &&
				     (a->flags2 &
				      (uint32_t)(FUSE_OVER_IO_URING >> 32));

			atomic_store(&xp->offered, offer);
			atomic_store(&xp->offered_kp2,
				     !!(a->flags & FUSE_HANDLE_KILLPRIV_V2));
			atomic_store(&xp->init_unique, in->unique);
		}
		if (!xp_intercept(xp, in))
			return n;
	}
}

/* ---- the session --------------------------------------------------------- */

int xp_create(struct fuse_session *se, struct zfs *fs, enum xp_choice c,
	      struct xp **out, char *why, size_t len)
{
	int param = xp_uring_param();
	struct xp *xp;

	if (c == XP_URING && param <= 0) {
		snprintf(why, len,
			 param < 0 ?
				 "transport=uring: this kernel has no FUSE-over-io_uring (/sys/module/fuse/parameters/enable_uring is missing; Linux 6.14 or later with CONFIG_FUSE_IO_URING)" :
				 "transport=uring: the fuse module has io_uring off: as root, echo 1 > /sys/module/fuse/parameters/enable_uring (scripts/run.sh does it)");
		return -EOPNOTSUPP;
	}
	xp = calloc(1, sizeof(*xp));
	if (!xp)
		return -ENOMEM;
	xp->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (xp->stop_fd < 0) {
		int ret = -errno;

		free(xp);
		return ret;
	}
	xp->se = se;
	xp->fs = fs;
	xp->choice = c;
	xp->uring_wanted = c != XP_DEV && param > 0;
	xp->idle_wanted = true;
	xp->fd = -1;
	pthread_mutex_init(&xp->go_lock, NULL);
	pthread_cond_init(&xp->go_cv, NULL);
	pthread_mutex_init(&xp->sync_lock, NULL);
	pthread_cond_init(&xp->sync_cv, NULL);
	xp_set_name(xp, "dev");
	*out = xp;
	return 0;
}

void xp_set_idle(struct xp *xp, bool on)
{
	xp->idle_wanted = on;
}

int xp_attach(struct xp *xp)
{
	static const struct fuse_custom_io io = {
		.read = xp_read,
		.writev = xp_writev,
	};

	xp->fd = fuse_session_fd(xp->se);
	if (fuse_session_custom_io(xp->se, &io, xp->fd))
		return -EINVAL;
	return 0;
}

int xp_loop(struct xp *xp, struct fuse_loop_config *cfg)
{
	int ret = fuse_session_loop_mt(xp->se, cfg);

	/*
	 * The rings hold /dev/fuse open: they go before the session
	 * unmounts, so that closing it ends the connection.
	 */
	xp_queues_stop(xp, -1);
	xp_queues_free(xp);
	return ret;
}

void xp_destroy(struct xp *xp)
{
	if (!xp)
		return;
	xp_queues_stop(xp, -1);
	xp_queues_free(xp);
	close(xp->stop_fd);
	pthread_cond_destroy(&xp->sync_cv);
	pthread_mutex_destroy(&xp->sync_lock);
	pthread_cond_destroy(&xp->go_cv);
	pthread_mutex_destroy(&xp->go_lock);
	free(xp);
}
