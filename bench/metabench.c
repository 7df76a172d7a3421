// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * metabench - the metadata workload of bench/run.sh, one phase per run.
 *
 *   metabench create DIR NFILES [BYTES [PER_DIR]]
 *   metabench stat   DIR NFILES [BYTES [PER_DIR]]
 *   metabench unlink DIR NFILES [BYTES [PER_DIR]]
 *
 * The tree is DIR/dNNNNN/fNNNNNNN, PER_DIR files per directory (default
 * 200). create makes the directories, then creates each file, writes
 * BYTES (default 4096) to it and closes it; stat stats each file by its
 * path and checks its size; unlink removes the files, then the
 * directories. Each prints one JSON object: the phase, the files, the
 * seconds it took and the operations per second (one operation is one
 * file). Phases are separate runs so that the caller can drop caches, or
 * unmount, between them.
 *
 * C, not a script: at tens of microseconds per operation an interpreter's
 * own overhead would be a good part of what is measured.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MB_PER_DIR 200u

enum mb_phase { MB_CREATE, MB_STAT, MB_UNLINK };

static double mb_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void mb_dir_path(char *buf, size_t len, const char *dir, unsigned d)
{
	snprintf(buf, len, "%s/d%05u", dir, d);
}

static void mb_file_path(char *buf, size_t len, const char *dir,
			 unsigned int per_dir, unsigned int i)
{
	snprintf(buf, len, "%s/d%05u/f%07u", dir, i / per_dir, i);
}

static int mb_create(const char *dir, unsigned int n, size_t bytes,
		     unsigned int per_dir)
{
	unsigned int ndirs = (n + per_dir - 1) / per_dir, i;
	char path[4096];
	char *buf = malloc(bytes ? bytes : 1);

	if (!buf)
		return -ENOMEM;
	memset(buf, 0x5a, bytes);
	for (i = 0; i < ndirs; i++) {
		mb_dir_path(path, sizeof(path), dir, i);
		if (mkdir(path, 0755) < 0) {
			fprintf(stderr, "metabench: mkdir %s: %s\n", path,
				strerror(errno));
			goto out_free;
		}
	}
	for (i = 0; i < n; i++) {
		int fd;

		mb_file_path(path, sizeof(path), dir, per_dir, i);
		fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0) {
			fprintf(stderr, "metabench: create %s: %s\n", path,
				strerror(errno));
			goto out_free;
		}
		if (bytes && write(fd, buf, bytes) != (ssize_t)bytes) {
			fprintf(stderr, "metabench: write %s: %s\n", path,
				strerror(errno));
			close(fd);
			goto out_free;
		}
		if (close(fd) < 0) {
			fprintf(stderr, "metabench: close %s: %s\n", path,
				strerror(errno));
			goto out_free;
		}
	}
	free(buf);
	return 0;

out_free:
	free(buf);
	return -EIO;
}

static int mb_stat(const char *dir, unsigned int n, size_t bytes,
		   unsigned int per_dir)
{
	char path[4096];
	struct stat st;
	unsigned int i;

	for (i = 0; i < n; i++) {
		mb_file_path(path, sizeof(path), dir, per_dir, i);
		if (stat(path, &st) < 0) {
			fprintf(stderr, "metabench: stat %s: %s\n", path,
				strerror(errno));
			return -EIO;
		}
		if ((size_t)st.st_size != bytes) {
			fprintf(stderr, "metabench: %s: size %jd, wrote %zu\n",
				path, (intmax_t)st.st_size, bytes);
			return -EIO;
		}
	}
	return 0;
}

static int mb_unlink(const char *dir, unsigned int n, unsigned int per_dir)
{
	unsigned int ndirs = (n + per_dir - 1) / per_dir, i;
	char path[4096];

	for (i = 0; i < n; i++) {
		mb_file_path(path, sizeof(path), dir, per_dir, i);
		if (unlink(path) < 0) {
			fprintf(stderr, "metabench: unlink %s: %s\n", path,
				strerror(errno));
			return -EIO;
		}
	}
	for (i = 0; i < ndirs; i++) {
		mb_dir_path(path, sizeof(path), dir, i);
		if (rmdir(path) < 0) {
			fprintf(stderr, "metabench: rmdir %s: %s\n", path,
				strerror(errno));
			return -EIO;
		}
	}
	return 0;
}

static int mb_parse_uint(const char *s, unsigned long long max,
			 unsigned long long *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno || *end || end == s || *out > max ? -EINVAL : 0;
}

int main(int argc, char **argv)
{
	static const char *const names[] = {"create", "stat", "unlink"};
	unsigned long long n, bytes = 4096, per_dir = MB_PER_DIR;
	enum mb_phase phase;
	double t0, t;
	int ret;

	if (argc < 4 || argc > 6)
		goto usage;
	for (phase = MB_CREATE; phase <= MB_UNLINK; phase++)
		if (!strcmp(argv[1], names[phase]))
			break;
	if (phase > MB_UNLINK || mb_parse_uint(argv[3], 10000000, &n) || !n ||
	    (argc > 4 && mb_parse_uint(argv[4], 1ull << 30, &bytes)) ||
	    (argc > 5 && mb_parse_uint(argv[5], 1000000, &per_dir)) || !per_dir)
		goto usage;

	t0 = mb_now();
	switch (phase) {
	case MB_CREATE:
		ret = mb_create(argv[2], (unsigned int)n, (size_t)bytes,
				(unsigned int)per_dir);
		break;
	case MB_STAT:
		ret = mb_stat(argv[2], (unsigned int)n, (size_t)bytes,
			      (unsigned int)per_dir);
		break;
	default:
		ret = mb_unlink(argv[2], (unsigned int)n,
				(unsigned int)per_dir);
		break;
	}
	t = mb_now() - t0;
	if (ret)
		return 1;
	printf("{\"phase\": \"%s\", \"files\": %llu, \"seconds\": %.6f, \"ops_per_s\": %.1f}\n",
	       names[phase], n, t, t > 0 ? (double)n / t : 0.0);
	return 0;

usage:
	fprintf(stderr,
		"usage: metabench create|stat|unlink DIR NFILES [BYTES [PER_DIR]]\n"
		"The tree is DIR/dNNNNN/fNNNNNNN; BYTES per file (default 4096),\n"
		"PER_DIR files per directory (default %u). DIR must exist.\n",
		MB_PER_DIR);
	return 16;
}
