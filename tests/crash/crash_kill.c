// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The kill-test tools of crash_ace (tests/crash/kill-record.sh drives them):
 *
 *   crash_ace writer DIR --mode files|gc|meta [--manifest FILE] [--seed N]
 *             [--phase FILE] [--seconds N]
 *       Write into a mounted zonefuse at DIR until the mount dies under it
 *       (the daemon was killed) or the time is up. Every file's content is
 *       a pattern named by the file's key (its name without a .tmp or
 *       .moved suffix), so anything read back can be checked without
 *       knowing when it was written. A file is added to the manifest only
 *       after its fsync and its directory's fsync returned; a file is
 *       taken out of it before it is deleted.
 *         files: write, fsync, rename into place, fsync the directory; one
 *                file in four is left without fsync.
 *         gc:    fill the file system to 88%, then delete and write files
 *                at random, so that reclaim copies and resets zones.
 *         meta:  many small metadata changes (4 KB xattrs, creates,
 *                renames, unlinks), so that the journal rolls to a new
 *                snapshot again and again.
 *       --phase FILE is written "churn" once gc has filled the device.
 *
 *   crash_ace verify DIR [--manifest FILE]
 *       Check a mounted zonefuse: every file is its pattern (zeros only in
 *       holes, and none at all in a manifest file), every xattr holds the
 *       value its generation says, every manifest file is there with its
 *       size.
 *
 *   crash_ace replay --log LOG --base IMAGE [--points N] [--max-all N]
 *             [--sample N] [--seed N] [--work DIR]
 *       Rebuild crash states from a recording of a daemon (ZONEFUSE_RECORD)
 *       and its base image, and check each: fsck clean, the library mounts
 *       it, every file and xattr is its pattern (as verify, without the
 *       manifest: when each fsync returned is not in the log), fsck clean
 *       after the mount's recovery. --points bounds the crash points
 *       checked: the last half of them and an even spread of the rest.
 *
 * Exit status: 0 if nothing is wrong, 1 if something is, 2 on a usage or
 * harness error.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "ace.h"
#include "crash_ace.h"
#include "zonefuse/crash.h"
#include "zonefuse/util.h"
#include "zonefuse/zdev.h"
#include "zonefuse/zfs.h"

#define KILL_XVAL 4000u

static uint32_t kill_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h | 0x100000u;
}

/* The key of a file: its name without a ".tmp" or ".moved" suffix. */
static void kill_key(const char *name, char *key, size_t len)
{
	const char *dot = strchr(name, '.');
	size_t n = dot ? (size_t)(dot - name) : strlen(name);

	if (n >= len)
		n = len - 1;
	memcpy(key, name, n);
	key[n] = '\0';
}

/* An xattr value: its generation (4 bytes LE), then its pattern. */
static void kill_xval(uint8_t *v, const char *key, const char *xname,
		      uint32_t gen)
{
	uint32_t le = htole32(gen);

	memcpy(v, &le, 4);
	ace_pattern(v + 4, KILL_XVAL - 4, 0,
		    kill_hash(key) ^ kill_hash(xname) ^ gen);
}

static uint64_t kill_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- checking content ---------------------------------------------------- */

struct kill_report {
	uint64_t files, bytes, xattrs, problems;
	const char *where; /* "crash point 7 keep 1.0" or the directory */
};

__attribute__((format(printf, 2, 3))) static void kill_bad(struct kill_report *r,
							  const char *fmt,
							  ...)
{
	va_list ap;

	r->problems++;
	if (r->problems > 20)
		return;
	printf("VIOLATION %s: ", r->where);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/*
 * Check @size bytes of the file @path (key from its name) in @data. A
 * zero byte is allowed only where @hole says there is no data (and never
 * with @strict: a manifest file was fsynced whole).
 */
static void kill_check_data(struct kill_report *r, const char *path,
			    const uint8_t *data, uint64_t size,
			    bool (*hole)(void *arg, uint64_t off), void *arg,
			    bool strict)
{
	char key[64];
	uint8_t want[4096];
	const char *name = strrchr(path, '/');
	uint64_t off;
	uint32_t tag;

	kill_key(name ? name + 1 : path, key, sizeof(key));
	tag = kill_hash(key);
	r->files++;
	r->bytes += size;
	for (off = 0; off < size; off += sizeof(want)) {
		size_t n = (size_t)ZF_MIN(size - off, sizeof(want)), i;

		ace_pattern(want, n, off, tag);
		if (!memcmp(want, data + off, n))
			continue;
		for (i = 0; i < n && want[i] == data[off + i]; i++)
			;
		if (!data[off + i] && !strict && hole && hole(arg, off + i))
			continue;
		kill_bad(r, "%s (%" PRIu64 " bytes): byte %" PRIu64
			 " is 0x%02x, its pattern says 0x%02x%s",
			 path, size, off + i, data[off + i], want[i],
			 data[off + i] ? "" :
			 strict ? " (an fsynced file with zeros)" :
				  " (zeros where the file maps data)");
		return;
	}
}

static void kill_check_xattr(struct kill_report *r, const char *path,
			     const char *xname, const uint8_t *v, size_t len)
{
	uint8_t want[KILL_XVAL];
	const char *name = strrchr(path, '/');
	char key[64];
	uint32_t gen;

	if (strncmp(xname, "user.x", 6))
		return;
	r->xattrs++;
	kill_key(name ? name + 1 : path, key, sizeof(key));
	if (len != KILL_XVAL) {
		kill_bad(r, "%s: xattr %s has %zu bytes, not %u", path, xname,
			 len, KILL_XVAL);
		return;
	}
	memcpy(&gen, v, 4);
	kill_xval(want, key, xname, le32toh(gen));
	if (memcmp(want, v, len))
		kill_bad(r, "%s: xattr %s (generation %u) is not its value",
			 path, xname, le32toh(gen));
}

/* ---- the writer -------------------------------------------------------------- */

struct kill_writer {
	const char *dir;
	FILE *manifest;
	uint64_t rng;
	uint64_t deadline; /* monotonic ns, 0: none */
	uint32_t next;	   /* file counter */
	uint8_t *buf;
	char **live;	   /* gc: the files in the manifest */
	uint32_t nlive;
};

static bool kill_time_up(const struct kill_writer *w)
{
	return w->deadline && zutil_now_mono_ns() > w->deadline;
}

static void kill_manifest(struct kill_writer *w, const char *fmt, ...)
{
	va_list ap;

	if (!w->manifest)
		return;
	va_start(ap, fmt);
	vfprintf(w->manifest, fmt, ap);
	va_end(ap);
	/* The line must be there even if we are killed next. */
	fflush(w->manifest);
}

/*
 * Write @size bytes of @key's pattern to @path in pieces of random size,
 * in order; fsync it if asked. 0 or -errno.
 */
static int kill_write_file(struct kill_writer *w, const char *path,
			   const char *key, uint64_t size, bool sync)
{
	uint32_t tag = kill_hash(key);
	uint64_t off = 0;
	int fd, ret = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -errno;
	while (off < size) {
		uint64_t piece = 1 + kill_rand(&w->rng) % (1u << 20);
		size_t n = (size_t)ZF_MIN(size - off, piece);
		ssize_t k;

		ace_pattern(w->buf, n, off, tag);
		k = pwrite(fd, w->buf, n, (off_t)off);
		if (k <= 0) {
			ret = k < 0 ? -errno : -EIO;
			break;
		}
		off += (uint64_t)k;
	}
	if (!ret && sync && fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && !ret)
		ret = -errno;
	return ret;
}

static int kill_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY), ret = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static uint64_t kill_pick_size(struct kill_writer *w)
{
	static const uint64_t sizes[] = { 0, 1, 4095, 4096, 4097, 65536,
					  100001, 1048576, 1048583, 3000000 };
	uint64_t r = kill_rand(&w->rng);

	if (r % 3)
		return sizes[(r >> 8) % ZF_ARRAY_SIZE(sizes)];
	return (r >> 8) % (4u << 20);
}

/* files: at most this many fsynced files stay; the oldest go. */
#define KILL_FILES_KEEP 24

static int kill_files(struct kill_writer *w)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8], key[32];
	char *ring[KILL_FILES_KEEP] = { NULL };
	uint32_t nring = 0;
	int ret = 0;

	while (!ret && !kill_time_up(w)) {
		uint32_t i = w->next++;
		uint64_t size = kill_pick_size(w);

		if (nring == KILL_FILES_KEEP) {
			/* Out of the manifest first, then deleted. */
			kill_manifest(w, "-%s\n", ring[0]);
			snprintf(path, sizeof(path), "%s/%s", w->dir, ring[0]);
			free(ring[0]);
			memmove(ring, ring + 1, --nring * sizeof(*ring));
			if (unlink(path) < 0 && errno != ENOENT) {
				ret = -errno;
				break;
			}
		}

		if (i % 4 != 3) {
			snprintf(key, sizeof(key), "f%06u", i);
			snprintf(path, sizeof(path), "%s/%s", w->dir, key);
			snprintf(tmp, sizeof(tmp), "%s.tmp", path);
			ret = kill_write_file(w, tmp, key, size, true);
			if (!ret && rename(tmp, path) < 0)
				ret = -errno;
			if (!ret)
				ret = kill_fsync_dir(w->dir);
			if (!ret) {
				kill_manifest(w, "+%s %" PRIu64 "\n", key,
					      size);
				ring[nring++] = strdup(key);
			}
		} else {
			/* Not synced: it may be lost, never garbage. */
			snprintf(key, sizeof(key), "g%06u", i);
			snprintf(path, sizeof(path), "%s/%s", w->dir, key);
			ret = kill_write_file(w, path, key, size, false);
			if (!ret && i % 8 == 7) {
				snprintf(tmp, sizeof(tmp), "%s.moved", path);
				if (rename(path, tmp) < 0)
					ret = -errno;
			}
			if (!ret && i >= 8) {
				snprintf(path, sizeof(path), "%s/g%06u",
					 w->dir, i - 8);
				unlink(path);
				snprintf(path, sizeof(path), "%s/g%06u.moved",
					 w->dir, i - 4);
				unlink(path);
			}
		}
		usleep(20000);
	}
	while (nring)
		free(ring[--nring]);
	return ret;
}

static double kill_used(const char *dir)
{
	struct statvfs sv;

	if (statvfs(dir, &sv) < 0 || !sv.f_blocks)
		return 1.0;
	return 1.0 - (double)sv.f_bavail / (double)sv.f_blocks;
}

/* gc: write one file of 200 KB to 1.2 MB, fsynced; into the manifest. */
static int kill_gc_add(struct kill_writer *w)
{
	char path[PATH_MAX], key[32];
	uint64_t size = 200000 + kill_rand(&w->rng) % 1000000;
	int ret;

	snprintf(key, sizeof(key), "c%06u", w->next++);
	snprintf(path, sizeof(path), "%s/%s", w->dir, key);
	ret = kill_write_file(w, path, key, size, true);
	if (!ret)
		ret = kill_fsync_dir(w->dir);
	if (ret == -ENOSPC) {
		unlink(path);
		return ret;
	}
	if (ret)
		return ret;
	kill_manifest(w, "+%s %" PRIu64 "\n", key, size);
	w->live = realloc(w->live, (w->nlive + 1) * sizeof(*w->live));
	if (!w->live)
		abort();
	w->live[w->nlive++] = strdup(key);
	return 0;
}

static int kill_gc_del(struct kill_writer *w)
{
	char path[PATH_MAX];
	uint32_t k;

	if (!w->nlive)
		return 0;
	k = (uint32_t)(kill_rand(&w->rng) % w->nlive);
	/* Out of the manifest first: if we die now, it may go or stay. */
	kill_manifest(w, "-%s\n", w->live[k]);
	snprintf(path, sizeof(path), "%s/%s", w->dir, w->live[k]);
	free(w->live[k]);
	w->live[k] = w->live[--w->nlive];
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

static int kill_gc(struct kill_writer *w, const char *phase)
{
	int ret = 0;

	while (!ret && kill_used(w->dir) < 0.88 && !kill_time_up(w)) {
		ret = kill_gc_add(w);
		if (ret == -ENOSPC)
			ret = 0, kill_gc_del(w);
	}
	if (ret)
		return ret;
	if (phase) {
		FILE *f = fopen(phase, "w");

		if (f) {
			fprintf(f, "churn\n");
			fclose(f);
		}
	}
	while (!ret && !kill_time_up(w)) {
		/* Delete one in three, then top up: zones die piecewise. */
		uint32_t n = 1 + w->nlive / 3, i;

		for (i = 0; i < n && !ret; i++)
			ret = kill_gc_del(w);
		if (!ret)
			ret = kill_fsync_dir(w->dir);
		while (!ret && kill_used(w->dir) < 0.88 && !kill_time_up(w)) {
			ret = kill_gc_add(w);
			if (ret == -ENOSPC) {
				ret = kill_gc_del(w);
				break;
			}
		}
	}
	return ret;
}

static int kill_meta(struct kill_writer *w)
{
	char path[PATH_MAX], key[32], xname[32], to[PATH_MAX + 8];
	uint8_t val[KILL_XVAL];
	uint32_t i, gen = 0;
	int ret = 0;

	/* A few files to hang xattrs on, durable. */
	for (i = 0; i < 16 && !ret; i++) {
		snprintf(key, sizeof(key), "m%03u", i);
		snprintf(path, sizeof(path), "%s/%s", w->dir, key);
		ret = kill_write_file(w, path, key, 100 + i, true);
	}
	if (!ret)
		ret = kill_fsync_dir(w->dir);
	for (i = 0; i < 16 && !ret; i++)
		kill_manifest(w, "+m%03u %u\n", i, 100 + i);
	while (!ret && !kill_time_up(w)) {
		uint64_t r = kill_rand(&w->rng);

		gen++;
		switch (r % 8) {
		case 0: /* a file made, renamed, later unlinked */
			snprintf(key, sizeof(key), "n%06u", w->next++);
			snprintf(path, sizeof(path), "%s/%s", w->dir, key);
			ret = kill_write_file(w, path, key, r % 300, false);
			snprintf(to, sizeof(to), "%s.moved", path);
			if (!ret && rename(path, to) < 0)
				ret = -errno;
			if (!ret && w->next > 20) {
				snprintf(path, sizeof(path), "%s/n%06u.moved",
					 w->dir, w->next - 20);
				unlink(path);
			}
			break;
		case 1:
			ret = kill_fsync_dir(w->dir);
			break;
		default: /* a 4 KB xattr: the journal grows fast */
			snprintf(key, sizeof(key), "m%03u",
				 (unsigned int)(r >> 8) % 16);
			snprintf(path, sizeof(path), "%s/%s", w->dir, key);
			snprintf(xname, sizeof(xname), "user.x%u",
				 (unsigned int)(r >> 16) % 4);
			kill_xval(val, key, xname, gen);
			if (setxattr(path, xname, val, sizeof(val), 0) < 0)
				ret = -errno;
		}
	}
	return ret;
}

/*
 * Where this round's file numbers start: two blocks of 1000 past every
 * number in the manifest @path (names the rounds before used, fsynced or
 * deleted), or 0 if it names none. A random start collided now and then:
 * two rounds of six started at the same block, and the second round's
 * files took the first's names (and sizes).
 */
static uint32_t kill_next_block(const char *path)
{
	FILE *f = fopen(path, "r");
	unsigned long max = 0;
	bool any = false;
	char line[256];

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *end;
		unsigned long n;

		if ((line[0] != '+' && line[0] != '-') || line[1] < 'a' ||
		    line[1] > 'z')
			continue;
		n = strtoul(line + 2, &end, 10);
		if (end - (line + 2) < 6)
			continue; /* not a file number (meta's xattr names) */
		any = true;
		if (n > max)
			max = n;
	}
	fclose(f);
	return any ? (uint32_t)(max / 1000 + 2) * 1000 : 0;
}

static int kill_writer_main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "manifest", required_argument, NULL, 'f' },
		{ "seed", required_argument, NULL, 's' },
		{ "phase", required_argument, NULL, 'p' },
		{ "seconds", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	struct kill_writer w = { 0 };
	const char *mode = "files", *manifest = NULL, *phase = NULL;
	int opt, ret;

	w.rng = 1;
	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'm':
			mode = optarg;
			break;
		case 'f':
			manifest = optarg;
			break;
		case 's':
			w.rng = strtoull(optarg, NULL, 0);
			break;
		case 'p':
			phase = optarg;
			break;
		case 't':
			w.deadline = zutil_now_mono_ns() +
				     strtoull(optarg, NULL, 0) * 1000000000ull;
			break;
		default:
			return 2;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "usage: crash_ace writer DIR --mode files|gc|meta [--manifest FILE] [--seed N] [--phase FILE] [--seconds N]\n");
		return 2;
	}
	w.dir = argv[optind];
	/* File numbers go on across rounds: never reuse a name. */
	w.next = (uint32_t)(kill_rand(&w.rng) % 1000) * 1000;
	if (manifest && kill_next_block(manifest))
		w.next = kill_next_block(manifest);
	if (manifest) {
		w.manifest = fopen(manifest, "a");
		if (!w.manifest) {
			fprintf(stderr, "crash_ace writer: %s: %s\n", manifest,
				strerror(errno));
			return 2;
		}
	}
	w.buf = malloc(1u << 20);
	if (!w.buf)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(mode, "files"))
		ret = kill_files(&w);
	else if (!strcmp(mode, "gc"))
		ret = kill_gc(&w, phase);
	else if (!strcmp(mode, "meta"))
		ret = kill_meta(&w);
	else
		ret = -EINVAL;
	/* The mount going away under us is how a round ends. */
	printf("crash_ace writer: %s: stopped after %u files: %s\n", mode,
	       w.next, ret ? strerror(-ret) : "time is up");
	if (w.manifest)
		fclose(w.manifest);
	while (w.nlive)
		free(w.live[--w.nlive]);
	free(w.live);
	free(w.buf);
	return ret == -EINVAL ? 2 : 0;
}

/* ---- verify, on a mount ---------------------------------------------------------- */

struct kill_fdarg {
	int fd;
};

static bool kill_posix_hole(void *arg, uint64_t off)
{
	struct kill_fdarg *a = arg;
	off_t d = lseek(a->fd, (off_t)off, SEEK_DATA);

	/* Data starts later (or never): @off is in a hole. */
	return (d < 0 && errno == ENXIO) || (d >= 0 && (uint64_t)d > off);
}

struct kill_entry {
	char name[64];
	uint64_t size;
};

static void kill_verify_tree(struct kill_report *r, const char *dir,
			     const struct kill_entry *live, uint32_t nlive)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d) {
		kill_bad(r, "%s: cannot list it: %s", dir, strerror(errno));
		return;
	}
	while ((de = readdir(d))) {
		char path[PATH_MAX], list[4096], *x;
		struct kill_fdarg a;
		struct stat st;
		uint8_t *data;
		ssize_t n;
		bool strict = false;
		uint32_t i;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (lstat(path, &st) < 0) {
			kill_bad(r, "%s: %s", path, strerror(errno));
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			kill_verify_tree(r, path, live, nlive);
			continue;
		}
		if (!S_ISREG(st.st_mode))
			continue;
		for (i = 0; i < nlive; i++)
			if (!strcmp(live[i].name, de->d_name))
				strict = true;
		a.fd = open(path, O_RDONLY);
		if (a.fd < 0) {
			kill_bad(r, "%s: %s", path, strerror(errno));
			continue;
		}
		data = malloc((size_t)st.st_size + 1);
		if (!data)
			abort();
		n = pread(a.fd, data, (size_t)st.st_size, 0);
		if (n != st.st_size)
			kill_bad(r, "%s: read %zd of %lld bytes", path, n,
				 (long long)st.st_size);
		else
			kill_check_data(r, path, data, (uint64_t)n,
					kill_posix_hole, &a, strict);
		free(data);
		close(a.fd);
		n = listxattr(path, list, sizeof(list));
		for (x = list; n > 0 && x < list + n; x += strlen(x) + 1) {
			uint8_t v[KILL_XVAL + 16];
			ssize_t l = getxattr(path, x, v, sizeof(v));

			if (l < 0)
				kill_bad(r, "%s: getxattr %s: %s", path, x,
					 strerror(errno));
			else
				kill_check_xattr(r, path, x, v, (size_t)l);
		}
	}
	closedir(d);
}

/* The files a manifest says must be there, with their sizes. */
static int kill_read_manifest(const char *path, struct kill_entry **out,
			      uint32_t *nout)
{
	struct kill_entry *v = NULL;
	uint32_t n = 0, i;
	char line[256];
	FILE *f = fopen(path, "r");

	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (fgets(line, sizeof(line), f)) {
		char name[64];
		uint64_t size = 0;

		if (line[0] == '+' &&
		    sscanf(line + 1, "%63s %" SCNu64, name, &size) == 2) {
			v = realloc(v, (n + 1) * sizeof(*v));
			if (!v)
				abort();
			snprintf(v[n].name, sizeof(v[n].name), "%s", name);
			v[n++].size = size;
		} else if (line[0] == '-' && sscanf(line + 1, "%63s", name) == 1) {
			for (i = 0; i < n; i++)
				if (!strcmp(v[i].name, name)) {
					v[i] = v[--n];
					break;
				}
		}
	}
	fclose(f);
	*out = v;
	*nout = n;
	return 0;
}

static int kill_verify_main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "manifest", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	struct kill_report r = { 0 };
	struct kill_entry *live = NULL;
	const char *manifest = NULL;
	uint32_t nlive = 0, i;
	int opt;

	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (opt != 'f')
			return 2;
		manifest = optarg;
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "usage: crash_ace verify DIR [--manifest FILE]\n");
		return 2;
	}
	r.where = argv[optind];
	if (manifest && kill_read_manifest(manifest, &live, &nlive)) {
		fprintf(stderr, "crash_ace verify: %s: %s\n", manifest,
			strerror(errno));
		return 2;
	}
	for (i = 0; i < nlive; i++) {
		char path[PATH_MAX];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", argv[optind],
			 live[i].name);
		if (stat(path, &st) < 0)
			kill_bad(&r, "fsynced file %s is missing: %s",
				 live[i].name, strerror(errno));
		else if ((uint64_t)st.st_size != live[i].size)
			kill_bad(&r, "fsynced file %s has %lld bytes, not %" PRIu64,
				 live[i].name, (long long)st.st_size,
				 live[i].size);
	}
	kill_verify_tree(&r, argv[optind], live, nlive);
	printf("crash_ace verify: %s: %" PRIu64 " files (%" PRIu64
	       " bytes), %" PRIu64 " xattrs, %u fsynced files expected, %" PRIu64
	       " problems\n",
	       argv[optind], r.files, r.bytes, r.xattrs, nlive, r.problems);
	free(live);
	return r.problems ? 1 : 0;
}

/* ---- replay: crash states of a recorded daemon ------------------------------------ */

struct kill_sarg {
	const struct ace_sino *si;
};

static bool kill_state_hole(void *arg, uint64_t off)
{
	const struct ace_sino *si = ((struct kill_sarg *)arg)->si;
	uint32_t i;

	for (i = 0; i < si->next; i++)
		if (off >= si->ext[i][0] && off - si->ext[i][0] < si->ext[i][1])
			return false;
	return true;
}

static const struct ace_sino *kill_state_ino(const struct ace_state *st,
					     uint64_t ino)
{
	uint32_t i;

	for (i = 0; i < st->nin; i++)
		if (st->in[i].ino == ino)
			return &st->in[i];
	return NULL;
}

static int kill_fsck(const char *img, struct kill_report *r, const char *when)
{
	struct zfs_fsck_result res;
	char err[512] = "";
	int ret = zfs_fsck(img, false, NULL, NULL, &res, err, sizeof(err));

	if (ret != ZFS_FSCK_OK)
		kill_bad(r, "fsck %s: exit %d, %u errors%s%s", when, ret,
			 res.errors, err[0] ? ": " : "", err);
	return ret;
}

/* Check one built crash state @img. */
static void kill_check_image(const char *img, struct kill_report *r)
{
	struct zfs_opts o = { .commit_ms = 3600000, .no_reclaim_thread = true };
	struct ace_state st;
	struct zfs *fs;
	char err[512];
	uint32_t i, j;
	int ret;

	kill_fsck(img, r, "of the crash state");
	ret = zfs_mount(img, &o, &fs, err, sizeof(err));
	if (ret) {
		kill_bad(r, "mount failed: %s", err);
		return;
	}
	ret = ace_state_read(fs, &st, err, sizeof(err));
	if (ret) {
		kill_bad(r, "reading it back failed: %s", err);
	} else {
		for (i = 0; i < st.nf; i++) {
			const struct ace_sino *si =
				kill_state_ino(&st, st.f[i].ino);
			struct kill_sarg a = { si };

			if (!si || !S_ISREG(st.f[i].mode))
				continue;
			kill_check_data(r, st.f[i].path, si->data, si->size,
					kill_state_hole, &a, false);
			for (j = 0; j < si->nxa; j++)
				kill_check_xattr(r, st.f[i].path,
						 si->xa[j].name, si->xa[j].val,
						 si->xa[j].len);
		}
		ace_state_free(&st);
	}
	ret = zfs_unmount(fs);
	if (ret)
		kill_bad(r, "unmount after recovery failed: %s", strerror(-ret));
	kill_fsck(img, r, "after the mount's recovery");
}

/*
 * The first crash point whose state with nothing lost is bad, by
 * bisection (a bad record, once durable, stays so): the smallest case to
 * look at. Returns 0 if the last point is good, 1 after saying the first
 * bad one, 2 on an error.
 */
static int kill_bisect(const struct crash_log *log,
		       const struct crash_log_info *li, const char *base,
		       const char *img)
{
	uint32_t lo = 0, hi = li->nr_points - 1;
	char err[512], where[256];
	int ret;

	for (;;) {
		struct kill_report r = { 0 };
		uint32_t mid = lo + (hi - lo) / 2;

		if (lo == hi)
			mid = hi;
		snprintf(where, sizeof(where), "crash point %u", mid);
		r.where = where;
		ret = crash_build(log, base, img, mid, NULL, err, sizeof(err));
		if (ret) {
			printf("HARNESS ERROR %s: %s\n", where, err);
			return 2;
		}
		kill_check_image(img, &r);
		if (lo == hi) {
			if (!r.problems) {
				printf("crash_ace replay: the last crash point is good\n");
				return 0;
			}
			crash_state_str(log, mid, NULL, err, sizeof(err));
			printf("crash_ace replay: the first bad crash point: %s\n",
			       err);
			return 1;
		}
		if (r.problems)
			hi = mid;
		else
			lo = mid + 1;
	}
}

static int kill_replay_main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "log", required_argument, NULL, 'l' },
		{ "base", required_argument, NULL, 'b' },
		{ "points", required_argument, NULL, 'p' },
		{ "max-all", required_argument, NULL, 'A' },
		{ "sample", required_argument, NULL, 'S' },
		{ "seed", required_argument, NULL, 's' },
		{ "work", required_argument, NULL, 'w' },
		{ "point", required_argument, NULL, 'P' },
		{ "keep", required_argument, NULL, 'K' },
		{ "bisect", no_argument, NULL, 'B' },
		{ "save", required_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	const char *logp = NULL, *base = NULL, *work = NULL, *tmp;
	const char *keep_tok = NULL, *save = NULL;
	int64_t only = -1;
	bool bisect = false;
	uint64_t max_all = 16, seed = 1, states = 0, t0 = zutil_now_mono_ns();
	uint32_t max_points = 40, sample = 6, idx, checked = 0;
	struct kill_report r = { 0 };
	struct crash_log *log;
	struct crash_log_info li;
	char img[PATH_MAX], err[512], where[512];
	uint8_t *pick;
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'l':
			logp = optarg;
			break;
		case 'b':
			base = optarg;
			break;
		case 'p':
			max_points = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'A':
			max_all = strtoull(optarg, NULL, 0);
			break;
		case 'S':
			sample = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'w':
			work = optarg;
			break;
		case 'P':
			only = strtoll(optarg, NULL, 0);
			break;
		case 'K':
			keep_tok = optarg;
			break;
		case 'B':
			bisect = true;
			break;
		case 'v':
			save = optarg;
			break;
		default:
			return 2;
		}
	}
	if (!logp || !base || optind != argc || (keep_tok && only < 0)) {
		fprintf(stderr, "usage: crash_ace replay --log LOG --base IMAGE [--points N] [--max-all N] [--sample N]\n"
				"                        [--seed N] [--work DIR] [--point P [--keep K]] [--bisect] [--save IMAGE]\n"
				"  --bisect   find the first crash point whose state with nothing lost is bad\n"
				"  --save     keep the (last) state built there\n");
		return 2;
	}
	zlog_set_level(ZLOG_WARN);
	unsetenv(ZDEV_RECORD_ENV);
	tmp = getenv("TMPDIR");
	snprintf(img, sizeof(img), "%s/crash_ace.replay.%d.img",
		 work ? work : tmp && *tmp ? tmp : "/tmp", (int)getpid());
	ret = crash_log_open(logp, &log, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "crash_ace replay: %s\n", err);
		return 2;
	}
	crash_log_info(log, &li);
	printf("crash_ace replay: %s: %" PRIu64 " records (%" PRIu64
	       " writes, %" PRIu64 " MiB; %" PRIu64 " flushes, %" PRIu64
	       " resets, %" PRIu64 " finishes)%s, %u crash points\n",
	       logp, li.records, li.writes, li.write_bytes >> 20, li.flushes,
	       li.resets, li.finishes, li.torn ? ", torn at the end" : "",
	       li.nr_points);
	pick = calloc(li.nr_points, sizeof(*pick));
	if (!pick)
		return 2;
	if (bisect) {
		ret = kill_bisect(log, &li, base, img);
		free(pick);
		if (save)
			crash_copy_sparse(img, save);
		unlink(img);
		crash_log_close(log);
		return ret;
	}
	if (only >= 0) {
		if (only < li.nr_points)
			pick[only] = 1;
	} else {
		crash_pick_points(log, max_points, pick);
	}
	for (idx = 0; idx < li.nr_points; idx++) {
		uint32_t *keeps, nr, k;
		struct crash_point pt;

		if (!pick[idx])
			continue;
		crash_point(log, idx, &pt);
		if (keep_tok) {
			keeps = calloc(pt.nr_streams + 1, sizeof(*keeps));
			nr = 1;
			if (!keeps ||
			    crash_keep_parse(log, idx, keep_tok, keeps)) {
				fprintf(stderr, "crash_ace replay: --keep %s does not fit crash point %u\n",
					keep_tok, idx);
				free(keeps);
				ret = -EINVAL;
				break;
			}
		} else if (crash_states(log, idx, max_all, sample, seed,
					&keeps, &nr)) {
			ret = -ENOMEM;
			break;
		}
		checked++;
		for (k = 0; k < nr; k++) {
			const uint32_t *keep = &keeps[(size_t)k * pt.nr_streams];
			char ktok[128];
			uint64_t before = r.problems;

			crash_keep_str(log, idx, keep, ktok, sizeof(ktok));
			snprintf(where, sizeof(where),
				 "%s crash point %u keep %s", logp, idx, ktok);
			r.where = where;
			ret = crash_build(log, base, img, idx, keep, err,
					  sizeof(err));
			if (ret) {
				printf("HARNESS ERROR %s: %s\n", where, err);
				break;
			}
			states++;
			kill_check_image(img, &r);
			if (r.problems > before) {
				crash_state_str(log, idx, keep, err,
						sizeof(err));
				printf("  at %s\n  reproduce: crash_ace replay --log %s --base %s (point %u, keep %s)\n",
				       err, logp, base, idx, ktok);
			}
		}
		free(keeps);
		if (ret)
			break;
	}
	if (save)
		crash_copy_sparse(img, save);
	unlink(img);
	free(pick);
	crash_log_close(log);
	printf("crash_ace replay: %u crash points, %" PRIu64
	       " crash states checked, %" PRIu64 " violations, %.1f s\n",
	       checked, states, r.problems,
	       (double)(zutil_now_mono_ns() - t0) / 1e9);
	if (ret)
		return 2;
	return r.problems ? 1 : 0;
}

int crash_kill_main(int argc, char **argv)
{
	if (!strcmp(argv[0], "writer"))
		return kill_writer_main(argc, argv);
	if (!strcmp(argv[0], "verify"))
		return kill_verify_main(argc, argv);
	return kill_replay_main(argc, argv);
}
