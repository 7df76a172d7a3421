/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Small helpers shared by every module: sizes, logging, byte order. */
#ifndef ZONEFUSE_UTIL_H
#define ZONEFUSE_UTIL_H

#include <endian.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ZF_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define ZF_MIN(a, b) ((a) < (b) ? (a) : (b))
#define ZF_MAX(a, b) ((a) > (b) ? (a) : (b))
#define ZF_DIV_ROUND_UP(n, d) (((n) + (d)-1) / (d))
/* Round @n up / down to a multiple of @a (any positive @a). */
#define ZF_ROUND_UP(n, a) (ZF_DIV_ROUND_UP(n, a) * (a))
#define ZF_ROUND_DOWN(n, a) (((n) / (a)) * (a))

/*
 * Parse a size: digits with an optional binary suffix K, M, G or T (also
 * KiB, MB, ...; case-insensitive). Returns 0, or -EINVAL for anything else,
 * a zero-free empty string or an overflow.
 */
int zutil_parse_size(const char *s, uint64_t *out);

/* Parse an unsigned 32-bit decimal number. 0 or -EINVAL. */
int zutil_parse_u32(const char *s, uint32_t *out);

/* Length of a UUID's text, "8-4-4-4-12" hex digits, without the NUL. */
#define ZUTIL_UUID_STR_LEN 36

/*
 * Parse a UUID written as util-linux and RFC 4122 write it
 * (01234567-89ab-cdef-0123-456789abcdef, either case) into its 16 bytes.
 * 0, or -EINVAL for anything else.
 */
int zutil_uuid_parse(const char *s, uint8_t uuid[16]);

/* Write @uuid as lower-case 8-4-4-4-12 text into @buf; returns @buf. */
char *zutil_uuid_str(const uint8_t uuid[16],
		     char buf[ZUTIL_UUID_STR_LEN + 1]);

/* Format @v as "64 MiB", "1.50 GiB" or "512 B" into @buf; returns @buf. */
char *zutil_size_str(uint64_t v, char *buf, size_t len);

/*
 * Escape the bytes @s (@len) as `ls -b` does, so that a name is one word
 * on one line: \\ for a backslash, \\n \\t \\r \\a \\b \\f \\v, and \\ooo
 * (three octal digits) for a space (where ls -b has "\\ ": a space would
 * split the field for awk, as in /proc/self/mountinfo), every other
 * control byte and
 * every byte that is not part of valid UTF-8 (or is a C1 control); the
 * rest (printable ASCII, valid UTF-8 from U+00A0) as is. Writes at most
 * @size bytes with the NUL into @buf; returns the length it needs
 * without the NUL (as snprintf). At most 4 * @len.
 */
size_t zutil_escape(char *buf, size_t size, const char *s, size_t len);

/*
 * The first line of the file at @path (a sysfs or module attribute), its
 * newline taken off, into @buf of @len bytes (cut to @len - 1). Returns 0,
 * @buf "" for an empty file, or -errno of opening it.
 */
int zutil_read_line(const char *path, char *buf, size_t len);

/* Monotonic and real-time clocks in nanoseconds. */
uint64_t zutil_now_mono_ns(void);
int64_t zutil_now_real_ns(void);

/*
 * Logging. Messages go to stderr until zlog_to_syslog() is called (the
 * daemon calls it when it goes to the background). The process-wide level
 * and destination are the one piece of global state: like syslog itself,
 * they belong to the process, not to a file system.
 */
enum zlog_level { ZLOG_ERR = 3, ZLOG_WARN = 4, ZLOG_INFO = 6, ZLOG_DEBUG = 7 };

void zlog_set_level(enum zlog_level level);
bool zlog_enabled(enum zlog_level level);
void zlog_to_syslog(const char *ident);
__attribute__((format(printf, 2, 3))) void zlog(enum zlog_level level,
						const char *fmt, ...);

#define zlog_err(...) zlog(ZLOG_ERR, __VA_ARGS__)
#define zlog_warn(...) zlog(ZLOG_WARN, __VA_ARGS__)
#define zlog_info(...) zlog(ZLOG_INFO, __VA_ARGS__)
#define zlog_debug(...)                                                        \
	do {                                                                   \
		if (zlog_enabled(ZLOG_DEBUG))                                  \
			zlog(ZLOG_DEBUG, __VA_ARGS__);                         \
	} while (0)

/* snprintf into a caller's error buffer, which may be NULL. */
__attribute__((format(printf, 3, 4))) void zutil_err(char *err, size_t len,
						     const char *fmt, ...);

#endif /* ZONEFUSE_UTIL_H */
