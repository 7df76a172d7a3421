// SPDX-License-Identifier: GPL-2.0-or-later
/* Unit tests of the small helpers: CRC32C, size and number parsing. */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "zonefuse/crc32c.h"
#include "zonefuse/util.h"

/* ---- crc32c ------------------------------------------------------------- */

/* The check value of the CRC catalogue and the iSCSI (RFC 3720) vectors. */
START_TEST(test_crc32c_vectors)
{
	unsigned char b[32];
	unsigned int i;

	ck_assert_uint_eq(crc32c(0, "123456789", 9), 0xe3069283u);
	ck_assert_uint_eq(crc32c(0, "", 0), 0);
	memset(b, 0, sizeof(b));
	ck_assert_uint_eq(crc32c(0, b, sizeof(b)), 0x8a9136aau);
	memset(b, 0xff, sizeof(b));
	ck_assert_uint_eq(crc32c(0, b, sizeof(b)), 0x62a8ab43u);
	for (i = 0; i < sizeof(b); i++)
		b[i] = (unsigned char)i;
	ck_assert_uint_eq(crc32c(0, b, sizeof(b)), 0x46dd794eu);
	for (i = 0; i < sizeof(b); i++)
		b[i] = (unsigned char)(31 - i);
	ck_assert_uint_eq(crc32c(0, b, sizeof(b)), 0x113fdb5cu);
}
END_TEST

/*
 * Each implementation this CPU has (the three-lane instruction path, the
 * eight tables) gives the bit-wise definition's CRC, at every length
 * around the lane boundaries and from any start state.
 */
static uint32_t crc32c_ref(uint32_t crc, const unsigned char *p, size_t len)
{
	uint32_t c = ~crc;
	int k;

	while (len--) {
		c ^= *p++;
		for (k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
	}
	return ~c;
}

START_TEST(test_crc32c_long)
{
	static const size_t lens[] = { 4079, 4080, 4081, 4095, 4096, 4097,
				       8160, 8191, 12288, 65536 + 13 };
	static unsigned char b[65536 + 64];
	size_t i, j;

	enum crc32c_impl impl;

	for (i = 0; i < sizeof(b); i++)
		b[i] = (unsigned char)(i * 2654435761u >> 13);
	for (impl = CRC32C_TABLES; impl <= CRC32C_SSE42; impl++) {
		if (!crc32c_have(impl))
			continue;
		for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
			for (j = 0; j < 3; j++)
				ck_assert_uint_eq(
					crc32c_with(impl, (uint32_t)j * 0x1234567u,
						    b + j, lens[i]),
					crc32c_ref((uint32_t)j * 0x1234567u, b + j,
						   lens[i]));
	}
}
END_TEST

/*
 * crc32c() uses one implementation this CPU has, the same for the whole
 * process; the tables are always there.
 */
START_TEST(test_crc32c_choice)
{
	unsigned char b[4096];
	unsigned int i;

	for (i = 0; i < sizeof(b); i++)
		b[i] = (unsigned char)(i * 7 + 3);
	ck_assert(crc32c_have(CRC32C_TABLES));
	ck_assert(crc32c_have(crc32c_impl()));
	ck_assert_uint_eq(crc32c(0, b, sizeof(b)),
			  crc32c_with(crc32c_impl(), 0, b, sizeof(b)));
	ck_assert_uint_eq(crc32c_with(CRC32C_TABLES, 0, "123456789", 9),
			  0xe3069283u);
	ck_assert_uint_eq(crc32c_with(CRC32C_SSE42, 0, "123456789", 9),
			  0xe3069283u);
}
END_TEST

/* crc32c(crc32c(0, a), b) is the CRC of a followed by b, at any split. */
START_TEST(test_crc32c_chaining)
{
	const char *s = "123456789";
	unsigned int i;

	for (i = 0; i <= 9; i++)
		ck_assert_uint_eq(crc32c(crc32c(0, s, i), s + i, 9 - i),
				  0xe3069283u);
	ck_assert_uint_eq(crc32c(crc32c(0, s, 9), "", 0), 0xe3069283u);
}
END_TEST

/*
 * The word-at-a-time path must agree with the byte-wise definition at every
 * start alignment and length (a tail of 0-7 bytes, a misaligned head).
 */
START_TEST(test_crc32c_alignment)
{
	unsigned char *b = malloc(4096 + 16);
	unsigned int start, len, i;
	enum crc32c_impl impl;

	ck_assert_ptr_nonnull(b);
	srand(42);
	for (i = 0; i < 4096 + 16; i++)
		b[i] = (unsigned char)rand();
	for (impl = CRC32C_TABLES; impl <= CRC32C_SSE42; impl++) {
		if (!crc32c_have(impl))
			continue;
		for (start = 0; start < 16; start++) {
			for (len = 0; len < 80; len++) {
				uint32_t bytewise = 0;

				for (i = 0; i < len; i++)
					bytewise = crc32c_with(impl, bytewise,
							       b + start + i, 1);
				ck_assert_uint_eq(crc32c_with(impl, 0, b + start, len),
						  bytewise);
				ck_assert_uint_eq(bytewise,
						  crc32c_ref(0, b + start, len));
			}
			ck_assert_uint_eq(crc32c_with(impl, 0, b + start, 4096),
					  crc32c_with(impl,
						      crc32c_with(impl, 0, b + start,
								  1000),
						      b + start + 1000, 3096));
		}
	}
	free(b);
}
END_TEST

/* ---- zutil_parse_size ---------------------------------------------------- */

START_TEST(test_parse_size_ok)
{
	static const struct {
		const char *s;
		uint64_t v;
	} ok[] = {
		{ "0", 0 },
		{ "1", 1 },
		{ "4096", 4096 },
		{ "512b", 512 },
		{ "1K", 1024 },
		{ "1k", 1024 },
		{ "3KiB", 3 << 10 },
		{ "2kb", 2 << 10 },
		{ "64M", 64ull << 20 },
		{ "64MB", 64ull << 20 },
		{ "64mib", 64ull << 20 },
		{ "1G", 1ull << 30 },
		{ "2GiB", 2ull << 30 },
		{ "3gb", 3ull << 30 },
		{ "1T", 1ull << 40 },
		{ "5TiB", 5ull << 40 },
		{ "16777215T", 16777215ull << 40 },
		{ "18446744073709551615", UINT64_MAX },
	};
	unsigned int i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		uint64_t v = 12345;

		ck_assert_msg(zutil_parse_size(ok[i].s, &v) == 0, "\"%s\"",
			      ok[i].s);
		ck_assert_msg(v == ok[i].v, "\"%s\" gave %llu", ok[i].s,
			      (unsigned long long)v);
	}
}
END_TEST

START_TEST(test_parse_size_bad)
{
	static const char *const bad[] = {
		"",
		"12X",
		"-1",
		"+1",
		" 1",
		"1 M",
		"M",
		"1MM",
		"1.5G",
		"0x10",
		"1P",
		"18446744073709551616",  /* 2^64 */
		"16777216T",		 /* 2^64 */
		"18014398509481984K",	 /* 2^64 */
		"99999999999999999999G", /* strtoull overflows */
	};
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t v = 12345;

		ck_assert_msg(zutil_parse_size(bad[i], &v) == -EINVAL,
			      "\"%s\" was accepted", bad[i]);
		ck_assert_msg(v == 12345, "\"%s\" changed the output", bad[i]);
	}
	ck_assert_int_eq(zutil_parse_size(NULL, NULL), -EINVAL);
}
END_TEST

/* ---- zutil_parse_u32 ----------------------------------------------------- */

START_TEST(test_parse_u32)
{
	static const char *const bad[] = { "",	 "-1", "+1",	     " 1",
					   "1 ", "1K", "4294967296", "0x1",
					   "a" };
	uint32_t v = 7;
	unsigned int i;

	ck_assert_int_eq(zutil_parse_u32("0", &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(zutil_parse_u32("14", &v), 0);
	ck_assert_uint_eq(v, 14);
	ck_assert_int_eq(zutil_parse_u32("4294967295", &v), 0);
	ck_assert_uint_eq(v, UINT32_MAX);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 7;
		ck_assert_msg(zutil_parse_u32(bad[i], &v) == -EINVAL,
			      "\"%s\" was accepted", bad[i]);
		ck_assert_uint_eq(v, 7);
	}
	ck_assert_int_eq(zutil_parse_u32(NULL, &v), -EINVAL);
}
END_TEST

/* ---- zutil_size_str ------------------------------------------------------ */

START_TEST(test_size_str)
{
	char b[32];

	ck_assert_str_eq(zutil_size_str(0, b, sizeof(b)), "0 B");
	ck_assert_str_eq(zutil_size_str(512, b, sizeof(b)), "512 B");
	ck_assert_str_eq(zutil_size_str(4096, b, sizeof(b)), "4 KiB");
	ck_assert_str_eq(zutil_size_str(64ull << 20, b, sizeof(b)), "64 MiB");
	ck_assert_str_eq(zutil_size_str(3ull << 29, b, sizeof(b)), "1.50 GiB");
	ck_assert_str_eq(zutil_size_str(1ull << 50, b, sizeof(b)), "1 PiB");
}
END_TEST

/* ---- uuid ----------------------------------------------------------------- */

/* Text and bytes round-trip; either case is read, lower case written. */
START_TEST(test_uuid_roundtrip)
{
	static const uint8_t want[16] = { 0x01, 0x23, 0x45, 0x67, 0x89, 0xab,
					  0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98,
					  0x76, 0x54, 0x32, 0x10 };
	char buf[ZUTIL_UUID_STR_LEN + 1];
	uint8_t u[16];

	ck_assert_int_eq(zutil_uuid_parse("01234567-89AB-cdef-FEDC-ba9876543210", u), 0);
	ck_assert_mem_eq(u, want, 16);
	ck_assert_str_eq(zutil_uuid_str(u, buf),
			 "01234567-89ab-cdef-fedc-ba9876543210");
	ck_assert_int_eq(zutil_uuid_parse(buf, u), 0);
	ck_assert_mem_eq(u, want, 16);
}
END_TEST

/* Anything but 8-4-4-4-12 hex digits is -EINVAL, and leaves @uuid alone. */
START_TEST(test_uuid_bad)
{
	static const char *const bad[] = {
		"",
		"0123456789abcdef0123456789abcdef",	/* no dashes */
		"01234567-89ab-cdef-0123-456789abcde",	/* short */
		"01234567-89ab-cdef-0123-456789abcdef0", /* long */
		"0123456-789ab-cdef-0123-456789abcdef",	/* dash misplaced */
		"01234567-89ab-cdef-0123-456789abcdeg",	/* not hex */
		"01234567_89ab-cdef-0123-456789abcdef",
		"{1234567-89ab-cdef-0123-456789abcdef}",
	};
	uint8_t u[16], zero[16] = { 0 };
	size_t i;

	memset(u, 0, sizeof(u));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(zutil_uuid_parse(bad[i], u) == -EINVAL, "%s", bad[i]);
	ck_assert_int_eq(zutil_uuid_parse(NULL, u), -EINVAL);
	ck_assert_mem_eq(u, zero, 16);
}
END_TEST

/* Names as `ls -b` shows them: one word, one line, bytes recoverable. */
START_TEST(test_escape)
{
	static const struct {
		const char *in, *out;
	} t[] = {
		{ "plain.pt", "plain.pt" },
		{ "a b", "a\\040b" },
		{ "new\nline", "new\\nline" },
		{ "tab\tx", "tab\\tx" },
		{ "back\\slash", "back\\\\slash" },
		{ "q\"uo'te", "q\"uo'te" },
		{ "\xff\xfe", "\\377\\376" },
		{ "caf\xc3\xa9", "caf\xc3\xa9" },
		{ "c1\xc2\x85", "c1\\302\\205" },
		{ "del\x7f\x1b", "del\\177\\033" },
	};
	char buf[64];
	size_t i;

	for (i = 0; i < ZF_ARRAY_SIZE(t); i++) {
		size_t n = zutil_escape(buf, sizeof(buf), t[i].in,
					strlen(t[i].in));

		ck_assert_str_eq(buf, t[i].out);
		ck_assert_uint_eq(n, strlen(t[i].out));
	}
	/* Too small a buffer: cut, NUL-terminated, the full length said. */
	ck_assert_uint_eq(zutil_escape(buf, 4, "\xff\xff", 2), 8);
	ck_assert_str_eq(buf, "\\37");
}
END_TEST

START_TEST(test_uuid_str)
{
	const uint8_t u[16] = { 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0x4d, 0xef,
				0x80, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0xff };
	char buf[37];

	ck_assert_str_eq(zutil_uuid_str(u, buf),
			 "12345678-9abc-4def-8001-0203040506ff");
}
END_TEST

/* A one-line file written into a scratch directory, its path in @path. */
static void line_file(char *path, size_t len, const char *dir,
		      const char *name, const char *text)
{
	FILE *f;

	tu_path(path, len, dir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_ge(fputs(text, f), 0);
	ck_assert_int_eq(fclose(f), 0);
}

/*
 * An attribute's first line, without its newline; cut to the buffer; ""
 * for an empty file; the errno of opening a missing one.
 */
START_TEST(test_read_line)
{
	char dir[PATH_MAX], path[PATH_MAX], buf[8];

	tu_mkdtemp(dir, sizeof(dir));
	line_file(path, sizeof(path), dir, "a", "write back\nmore\n");
	ck_assert_int_eq(zutil_read_line(path, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "write b");
	line_file(path, sizeof(path), dir, "b", "Y\n");
	ck_assert_int_eq(zutil_read_line(path, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "Y");
	line_file(path, sizeof(path), dir, "c", "0-3");
	ck_assert_int_eq(zutil_read_line(path, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "0-3");
	line_file(path, sizeof(path), dir, "d", "");
	memset(buf, 'x', sizeof(buf));
	ck_assert_int_eq(zutil_read_line(path, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "");
	tu_path(path, sizeof(path), dir, "missing");
	ck_assert_int_eq(zutil_read_line(path, buf, sizeof(buf)), -ENOENT);
	tu_rmtree(dir);
}
END_TEST

static Suite *util_suite(void)
{
	Suite *s = suite_create("util");
	TCase *tc;

	tc = tcase_create("crc32c_vectors");
	tcase_add_test(tc, test_crc32c_vectors);
	suite_add_tcase(s, tc);
	tc = tcase_create("crc32c_chaining");
	tcase_add_test(tc, test_crc32c_chaining);
	suite_add_tcase(s, tc);
	tc = tcase_create("crc32c_long");
	tcase_add_test(tc, test_crc32c_long);
	suite_add_tcase(s, tc);
	tc = tcase_create("crc32c_alignment");
	tcase_add_test(tc, test_crc32c_alignment);
	suite_add_tcase(s, tc);
	tc = tcase_create("crc32c_choice");
	tcase_add_test(tc, test_crc32c_choice);
	suite_add_tcase(s, tc);
	tc = tcase_create("parse_size");
	tcase_add_test(tc, test_parse_size_ok);
	tcase_add_test(tc, test_parse_size_bad);
	suite_add_tcase(s, tc);
	tc = tcase_create("parse_u32");
	tcase_add_test(tc, test_parse_u32);
	suite_add_tcase(s, tc);
	tc = tcase_create("size_str");
	tcase_add_test(tc, test_size_str);
	suite_add_tcase(s, tc);
	tc = tcase_create("uuid_parse");
	tcase_add_test(tc, test_uuid_roundtrip);
	tcase_add_test(tc, test_uuid_bad);
	suite_add_tcase(s, tc);
	tc = tcase_create("escape");
	tcase_add_test(tc, test_escape);
	suite_add_tcase(s, tc);
	tc = tcase_create("uuid_str");
	tcase_add_test(tc, test_uuid_str);
	suite_add_tcase(s, tc);
	tc = tcase_create("read_line");
	tcase_add_test(tc, test_read_line);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(util_suite());
}
