// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests of the JSON output (zjson.c): the UTF-8 check, the lossless
 * encoding of byte strings, the one-line dump and the streamed list. Each
 * document written is read back with jansson's strict parser.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "zonefuse/zjson.h"

/* RFC 3629: what is UTF-8 and what is not. */
START_TEST(test_utf8_valid)
{
	static const char *good[] = { "", "plain", "caf\xc3\xa9",
				      "\xe2\x82\xac", "\xf0\x9f\x98\x80",
				      "\xf4\x8f\xbf\xbf" /* U+10FFFF */ };
	static const char *bad[] = {
		"\xff\xfe",	    "\x80",	    "\xc3",	 "\xc0\xaf",
		"\xe0\x80\xaf",	    "\xed\xa0\x80" /* surrogate */,
		"\xf4\x90\x80\x80" /* > U+10FFFF */, "\xf0\x8f\xbf\xbf",
		"ok\xe2\x82",	    "\xc3\x28",
	};
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(zjson_utf8_valid(good[i], strlen(good[i])),
			      "good %zu", i);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!zjson_utf8_valid(bad[i], strlen(bad[i])),
			      "bad %zu", i);
	/* A NUL inside is not a name's byte. */
	ck_assert(!zjson_utf8_valid("a\0b", 3));
}
END_TEST

/* UTF-8 bytes: one string, escaped by jansson, no _hex beside it. */
START_TEST(test_set_bytes_utf8)
{
	const char name[] = "q\"b\\n\nt\tcaf\xc3\xa9";
	json_t *o = json_object(), *back;
	char buf[256];

	ck_assert_int_eq(zjson_set_str(o, "name", name), 0);
	ck_assert_ptr_null(json_object_get(o, "name_hex"));
	ck_assert_int_gt(zjson_dumpb(o, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf,
			 "{\"name\": \"q\\\"b\\\\n\\nt\\tcaf\xc3\xa9\"}");
	back = json_loads(buf, JSON_REJECT_DUPLICATES, NULL);
	ck_assert_ptr_nonnull(back);
	ck_assert_str_eq(json_string_value(json_object_get(back, "name")),
			 name);
	json_decref(back);
	json_decref(o);
}
END_TEST

/* Other bytes: U+FFFD for each bad byte in KEY, every byte in KEY_hex. */
START_TEST(test_set_bytes_invalid)
{
	const char name[] = "a\xff\xfe\xc3\xa9z";
	json_t *o = json_object();
	char buf[256];

	ck_assert_int_eq(zjson_set_bytes(o, "path", name, sizeof(name) - 1),
			 0);
	ck_assert_str_eq(json_string_value(json_object_get(o, "path")),
			 "a\xef\xbf\xbd\xef\xbf\xbd\xc3\xa9z");
	ck_assert_str_eq(json_string_value(json_object_get(o, "path_hex")),
			 "61fffec3a97a");
	ck_assert_int_gt(zjson_dumpb(o, buf, sizeof(buf)), 0);
	ck_assert(zjson_utf8_valid(buf, strlen(buf)));
	json_decref(o);
}
END_TEST

/* A buffer too small is -ERANGE; numbers: counts and rounded reals. */
START_TEST(test_dumpb)
{
	json_t *o = json_object();
	char buf[128];

	ck_assert_int_eq(zjson_set_u64(o, "n", 42), 0);
	ck_assert_int_eq(zjson_set_u64(o, "big", UINT64_MAX), 0);
	ck_assert_int_eq(zjson_set_real(o, "wa", 1.000049, 4), 0);
	ck_assert_int_eq(zjson_set_real(o, "mean", 2.3456, 3), 0);
	ck_assert_int_eq(zjson_dumpb(o, buf, 8), -ERANGE);
	ck_assert_int_gt(zjson_dumpb(o, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf,
			 "{\"n\": 42, \"big\": null, \"wa\": 1.0, \"mean\": 2.346}");
	json_decref(o);
}
END_TEST

/* The streamed list: head members, then the items, one document. */
START_TEST(test_list)
{
	json_t *head = json_object(), *item = json_object(), *back, *a;
	struct zjson_list l;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(zjson_set_str(head, "device", "/dev/x"), 0);
	ck_assert_int_eq(zjson_list_begin(&l, f, head, "entries"), 0);
	ck_assert_int_eq(zjson_set_u64(item, "inode", 1), 0);
	ck_assert_int_eq(zjson_list_item(&l, item), 0);
	ck_assert_int_eq(zjson_list_item(&l, item), 0);
	ck_assert_int_eq(zjson_list_end(&l), 0);
	fclose(f);
	back = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
	ck_assert_ptr_nonnull(back);
	a = json_object_get(back, "entries");
	ck_assert_int_eq((int)json_array_size(a), 2);
	ck_assert_str_eq(json_string_value(json_object_get(back, "device")),
			 "/dev/x");
	json_decref(back);
	free(text);

	/* An empty head and an empty list are a document too. */
	json_object_clear(head);
	f = open_memstream(&text, &len);
	ck_assert_int_eq(zjson_list_begin(&l, f, head, "entries"), 0);
	ck_assert_int_eq(zjson_list_end(&l), 0);
	fclose(f);
	ck_assert_str_eq(text, "{\"entries\": []}\n");
	free(text);
	json_decref(item);
	json_decref(head);
}
END_TEST

static Suite *zjson_suite(void)
{
	Suite *s = suite_create("zjson");
	TCase *tc;

	tc = tcase_create("utf8_valid");
	tcase_add_test(tc, test_utf8_valid);
	suite_add_tcase(s, tc);
	tc = tcase_create("set_bytes_utf8");
	tcase_add_test(tc, test_set_bytes_utf8);
	suite_add_tcase(s, tc);
	tc = tcase_create("set_bytes_invalid");
	tcase_add_test(tc, test_set_bytes_invalid);
	suite_add_tcase(s, tc);
	tc = tcase_create("dumpb");
	tcase_add_test(tc, test_dumpb);
	suite_add_tcase(s, tc);
	tc = tcase_create("list");
	tcase_add_test(tc, test_list);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(zjson_suite());
}
