// SPDX-License-Identifier: GPL-2.0-or-later
#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zonefuse/util.h"

void tu_mkdtemp(char *dir, size_t len)
{
	const char *tmp = getenv("TMPDIR");

	if (!tmp || !*tmp)
		tmp = "/tmp";
	ck_assert_int_lt(snprintf(dir, len, "%s/zonefuse-test.XXXXXX", tmp),
			 (int)len);
	ck_assert_msg(mkdtemp(dir), "mkdtemp %s: %s", dir, strerror(errno));
}

static char tu_base[PATH_MAX];

void tu_scratch_begin(void)
{
	const char *tmp = getenv("TMPDIR");

	if (!tmp || !*tmp)
		tmp = "/tmp";
	snprintf(tu_base, sizeof(tu_base), "%s/zonefuse-test.XXXXXX", tmp);
	if (!mkdtemp(tu_base) || setenv("TMPDIR", tu_base, 1)) {
		fprintf(stderr, "cannot make a scratch directory in %s: %s\n",
			tmp, strerror(errno));
		exit(EXIT_FAILURE);
	}
}

static int tu_rm_one(const char *path, const struct stat *st, int flag,
		     struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) < 0 ? -1 : 0;
}

void tu_rmtree(const char *dir)
{
	if (dir && *dir)
		nftw(dir, tu_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void tu_scratch_end(void)
{
	tu_rmtree(tu_base);
}

void tu_path(char *path, size_t len, const char *dir, const char *name)
{
	ck_assert_int_lt(snprintf(path, len, "%s/%s", dir, name), (int)len);
}

void tu_make_image(const char *path, const struct zemu_params *p)
{
	char err[256] = "";
	int ret = zemu_create(path, p, err, sizeof(err));

	ck_assert_msg(ret == 0, "zemu_create %s: %d (%s)", path, ret, err);
}

int tu_parse_geom(const char *s, struct zemu_params *p)
{
	char *copy = strdup(s), *save = NULL, *tok;
	uint64_t zones = 0;
	bool cap = false;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, " ,", &save); tok && !ret;
	     tok = strtok_r(NULL, " ,", &save)) {
		char *val = strchr(tok, '=');
		uint64_t v;

		if (!val) {
			ret = -EINVAL;
			break;
		}
		*val++ = '\0';
		ret = zutil_parse_size(val, &v);
		if (ret)
			break;
		if (!strcmp(tok, "zones"))
			zones = v;
		else if (!strcmp(tok, "zone_size"))
			p->zone_size = v;
		else if (!strcmp(tok, "zone_capacity"))
			p->zone_capacity = v, cap = true;
		else if (!strcmp(tok, "bs"))
			p->block_size = (uint32_t)v;
		else if (!strcmp(tok, "max_open"))
			p->max_open = (uint32_t)v;
		else if (!strcmp(tok, "max_active"))
			p->max_active = (uint32_t)v;
		else if (!strcmp(tok, "nr_conv"))
			p->nr_conv = (uint32_t)v;
		else
			ret = -EINVAL;
	}
	/* A new zone size without a capacity means a full-size capacity. */
	if (!cap)
		p->zone_capacity = 0;
	if (!ret && zones)
		p->size = zones * p->zone_size;
	free(copy);
	return ret;
}

/* A 64-bit word per 8 bytes: the seed, then the byte offset on the device. */
static uint64_t tu_word(uint64_t off, uint32_t seed)
{
	return ((uint64_t)seed << 48) ^ off ^ 0x5a5a000000000000ull;
}

void tu_fill(void *buf, size_t len, uint64_t dev_off, uint32_t seed)
{
	unsigned char *p = buf;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t w = tu_word(dev_off + i, seed);

		memcpy(p + i, &w, 8);
	}
	for (; i < len; i++)
		p[i] = (unsigned char)(seed + i);
}

long tu_check(const void *buf, size_t len, uint64_t dev_off, uint32_t seed)
{
	const unsigned char *p = buf;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t w = tu_word(dev_off + i, seed);

		if (memcmp(p + i, &w, 8))
			return (long)i;
	}
	for (; i < len; i++)
		if (p[i] != (unsigned char)(seed + i))
			return (long)i;
	return -1;
}

bool tu_is_zero(const void *buf, size_t len)
{
	const unsigned char *p = buf;

	return !len || (p[0] == 0 && !memcmp(p, p + 1, len - 1));
}

void tu_report1(struct zdev *dev, uint32_t zone, struct zdev_zone *z)
{
	int ret = zdev_report(dev, zone, 1, z);

	ck_assert_msg(ret == 1, "report of zone %u: %d", zone, ret);
}

void tu_skip(const char *fmt, ...)
{
	va_list ap;

	printf("SKIP: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}
