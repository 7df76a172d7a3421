// SPDX-License-Identifier: GPL-2.0-or-later
#include "zonefuse/util.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <time.h>

int zutil_parse_size(const char *s, uint64_t *out)
{
	static const struct {
		const char *sfx;
		unsigned int shift;
	} sfx[] = {
		{ "", 0 },    { "b", 0 },    { "k", 10 },   { "kb", 10 },
		{ "kib", 10 }, { "m", 20 },   { "mb", 20 },  { "mib", 20 },
		{ "g", 30 },  { "gb", 30 },  { "gib", 30 }, { "t", 40 },
		{ "tb", 40 }, { "tib", 40 },
	};
	unsigned long long v;
	char *end;
	size_t i;

	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	for (i = 0; i < ZF_ARRAY_SIZE(sfx); i++) {
		if (strcasecmp(end, sfx[i].sfx))
			continue;
		if (sfx[i].shift && v > (UINT64_MAX >> sfx[i].shift))
			return -EINVAL;
		*out = (uint64_t)v << sfx[i].shift;
		return 0;
	}
	return -EINVAL;
}

int zutil_parse_u32(const char *s, uint32_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static int zutil_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int zutil_uuid_parse(const char *s, uint8_t uuid[16])
{
	uint8_t u[16];
	unsigned int i, n = 0;

	if (!s || strlen(s) != ZUTIL_UUID_STR_LEN)
		return -EINVAL;
	for (i = 0; i < ZUTIL_UUID_STR_LEN; i += 2) {
		int hi, lo;

		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return -EINVAL;
			i++;
		}
		hi = zutil_hex(s[i]);
		lo = zutil_hex(s[i + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		u[n++] = (uint8_t)(hi << 4 | lo);
	}
	memcpy(uuid, u, sizeof(u));
	return 0;
}

char *zutil_uuid_str(const uint8_t uuid[16], char buf[ZUTIL_UUID_STR_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned int i, o = 0;

	for (i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			buf[o++] = '-';
		buf[o++] = hex[uuid[i] >> 4];
		buf[o++] = hex[uuid[i] & 15];
	}
	buf[o] = '\0';
	return buf;
}

char *zutil_size_str(uint64_t v, char *buf, size_t len)
{
	static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double d = (double)v;
	unsigned int u = 0;

	while (d >= 1024 && u + 1 < ZF_ARRAY_SIZE(unit)) {
		d /= 1024;
		u++;
	}
	if (u == 0 || d == (double)(uint64_t)d)
		snprintf(buf, len, "%.0f %s", d, unit[u]);
	else
		snprintf(buf, len, "%.2f %s", d, unit[u]);
	return buf;
}

/* The length of the valid UTF-8 sequence of a code point from U+00A0 at @s. */
static size_t zutil_utf8_printable(const unsigned char *s, size_t len)
{
	uint32_t cp;
	size_t n, i;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (n > len)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < 0xa0 || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

size_t zutil_escape(char *buf, size_t size, const char *s, size_t len)
{
	static const char ctl[] = "\aa\bb\ff\nn\rr\tt\vv\\\\";
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, o = 0, n;
	char tmp[5];

	while (i < len) {
		const char *c = p[i] ? memchr(ctl, p[i], sizeof(ctl) - 1) : NULL;

		n = 1;
		if (c && (c - ctl) % 2 == 0) {
			tmp[0] = '\\';
			tmp[1] = c[1];
			tmp[2] = '\0';
		} else if (p[i] > 0x20 && p[i] < 0x7f) {
			tmp[0] = (char)p[i];
			tmp[1] = '\0';
		} else if (p[i] >= 0x80 && (n = zutil_utf8_printable(p + i, len - i))) {
			if (o + n < size)
				memcpy(buf + o, p + i, n);
			o += n;
			i += n;
			continue;
		} else {
			n = 1;
			snprintf(tmp, sizeof(tmp), "\\%03o", p[i]);
		}
		for (c = tmp; *c; c++, o++)
			if (o + 1 < size)
				buf[o] = *c;
		i += n;
	}
	if (size)
		buf[ZF_MIN(o, size - 1)] = '\0';
	return o;
}

uint64_t zutil_now_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int zutil_read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -errno;
	n = fgets(buf, (int)len, f) ? strlen(buf) : 0;
	fclose(f);
	buf[n && buf[n - 1] == '\n' ? n - 1 : n] = '\0';
	return 0;
}

int64_t zutil_now_real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static _Atomic int zlog_level = ZLOG_INFO;
static _Atomic bool zlog_syslog;

void zlog_set_level(enum zlog_level level)
{
	zlog_level = level;
}

bool zlog_enabled(enum zlog_level level)
{
	return (int)level <= zlog_level;
}

void zlog_to_syslog(const char *ident)
{
	openlog(ident, LOG_PID, LOG_DAEMON);
	zlog_syslog = true;
}

void zlog(enum zlog_level level, const char *fmt, ...)
{
	static const char *name[] = { [ZLOG_ERR] = "error",
				      [ZLOG_WARN] = "warning",
				      [ZLOG_INFO] = "info",
				      [ZLOG_DEBUG] = "debug" };
	char msg[1024];
	va_list ap;

	if (!zlog_enabled(level))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (zlog_syslog)
		syslog((int)level, "%s", msg);
	else
		fprintf(stderr, "zonefuse: %s: %s\n", name[level], msg);
}

void zutil_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}
