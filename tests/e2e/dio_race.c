// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dio_race FILE MIB ROUNDS: a buffered read after asynchronous O_DIRECT
 * writes must return the new bytes, while buffered readers of the file
 * run on handles of their own (issue 23, item 6; run by tests/e2e/ops.py,
 * async_direct_write).
 *
 * Each round fills FILE (MIB MiB) with one byte value through io_uring,
 * 1 MiB O_DIRECT writes 8 at a time, while three threads pread random
 * 4 KiB pages of it; then reads it all through a handle opened before the
 * writes and counts the 4 KiB pages that are not the new value. The
 * writer is opened beside a reader, so the kernel gives it the page cache
 * (zfs.h, ZFS_OPEN_NOCACHE) and the writes take its direct I/O path; every
 * other round opens it after the readers started instead of before. A
 * page a reader brought in while a write was in flight must be dropped
 * when the write completes: on Linux 6.1, with FUSE's asynchronous direct
 * I/O, it was not (1 to 3 stale pages in a third of the rounds under TCG).
 *
 * Prints one line per round; exit 0 when no page was stale, 1 when one
 * was, 2 when the test could not run.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DR_CHUNK (1u << 20)
#define DR_PAGE 4096u
#define DR_QD 8u
#define DR_READERS 3

static const char *dr_path;
static size_t dr_size;
static atomic_int dr_stop;

static void *dr_reader(void *arg)
{
	unsigned int seed = (unsigned int)(long)arg;
	char buf[DR_PAGE];
	int fd = open(dr_path, O_RDONLY);

	if (fd < 0)
		return (void *)(long)errno;
	while (!atomic_load(&dr_stop)) {
		off_t off = (off_t)(rand_r(&seed) % (dr_size / DR_PAGE)) * DR_PAGE;

		if (pread(fd, buf, sizeof(buf), off) < 0)
			break;
	}
	close(fd);
	return NULL;
}

/* Write all of @buf to @fd at offset 0 through io_uring; 0 or -errno. */
static int dr_write_all(int fd, const char *buf)
{
	unsigned int n = (unsigned int)(dr_size / DR_CHUNK), sub = 0, done = 0;
	struct io_uring ring;
	int ret;

	ret = io_uring_queue_init(DR_QD, &ring, 0);
	if (ret)
		return ret;
	while (done < n && !ret) {
		struct io_uring_cqe *cqe;

		for (; sub < n && sub - done < DR_QD; sub++) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

			io_uring_prep_write(sqe, fd, buf + (size_t)sub * DR_CHUNK,
					    DR_CHUNK, (off_t)sub * DR_CHUNK);
		}
		ret = io_uring_submit(&ring);
		if (ret < 0)
			break;
		ret = io_uring_wait_cqe(&ring, &cqe);
		if (ret)
			break;
		if (cqe->res != (int)DR_CHUNK)
			ret = cqe->res < 0 ? cqe->res : -EIO;
		io_uring_cqe_seen(&ring, cqe);
		done++;
	}
	io_uring_queue_exit(&ring);
	return ret < 0 ? ret : 0;
}

/* One round; the number of stale pages, or -1 (with a message). */
static long dr_round(unsigned int round, char *wbuf, char *rbuf)
{
	bool writer_first = round % 2;
	pthread_t th[DR_READERS];
	int keep, wfd = -1, i, ret;
	long stale = 0;
	size_t p;

	keep = open(dr_path, O_RDONLY);
	if (keep < 0)
		goto fail;
	if (writer_first && (wfd = open(dr_path, O_RDWR | O_DIRECT)) < 0)
		goto fail;
	atomic_store(&dr_stop, 0);
	for (i = 0; i < DR_READERS; i++)
		pthread_create(&th[i], NULL, dr_reader,
			       (void *)(long)(round * 7 + i));
	usleep(20000);
	if (!writer_first && (wfd = open(dr_path, O_WRONLY | O_DIRECT)) < 0)
		goto fail;
	memset(wbuf, 'A' + round % 26, dr_size);
	ret = dr_write_all(wfd, wbuf);
	atomic_store(&dr_stop, 1);
	for (i = 0; i < DR_READERS; i++)
		pthread_join(th[i], NULL);
	close(wfd);
	if (ret) {
		fprintf(stderr, "dio_race: the O_DIRECT writes failed: %s\n",
			strerror(-ret));
		close(keep);
		return -1;
	}
	if (pread(keep, rbuf, dr_size, 0) != (ssize_t)dr_size)
		goto fail;
	close(keep);
	for (p = 0; p < dr_size; p += DR_PAGE)
		if (memcmp(rbuf + p, wbuf + p, DR_PAGE))
			stale++;
	printf("round %u (writer opened %s the readers): %ld stale pages\n",
	       round, writer_first ? "before" : "after", stale);
	return stale;
fail:
	fprintf(stderr, "dio_race: %s: %s\n", dr_path, strerror(errno));
	return -1;
}

int main(int argc, char **argv)
{
	unsigned int rounds, r;
	char *wbuf, *rbuf;
	long stale = 0, s;
	int fd;

	if (argc != 4 || atoi(argv[2]) <= 0 || atoi(argv[3]) <= 0) {
		fprintf(stderr, "usage: dio_race FILE MIB ROUNDS\n");
		return 2;
	}
	dr_path = argv[1];
	dr_size = (size_t)atoi(argv[2]) << 20;
	rounds = (unsigned int)atoi(argv[3]);
	if (posix_memalign((void **)&wbuf, DR_PAGE, dr_size) ||
	    !(rbuf = malloc(dr_size))) {
		fprintf(stderr, "dio_race: out of memory\n");
		return 2;
	}
	memset(wbuf, 0, dr_size);
	fd = open(dr_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || pwrite(fd, wbuf, dr_size, 0) != (ssize_t)dr_size ||
	    fsync(fd) || close(fd)) {
		fprintf(stderr, "dio_race: %s: %s\n", dr_path, strerror(errno));
		return 2;
	}
	for (r = 1; r <= rounds; r++) {
		s = dr_round(r, wbuf, rbuf);
		if (s < 0)
			return 2;
		stale += s;
	}
	printf("dio_race: %ld stale pages in %u rounds\n", stale, rounds);
	free(wbuf);
	free(rbuf);
	return stale ? 1 : 0;
}
