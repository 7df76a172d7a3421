/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * JSON output: every `--json` of the commands and the stats xattr. The
 * documents are built with jansson (Debian's libjansson-dev) and written
 * by it; this module adds what jansson leaves to us: the one lossless
 * encoding of byte strings (names, paths, labels), and a document whose
 * long list is written as it is walked (zonefuse dump --json).
 *
 * The encoding of bytes (docs/usage.md, "JSON"): field KEY holds the
 * bytes as a JSON string when they are valid UTF-8; when they are not,
 * KEY holds them with each invalid byte replaced by U+FFFD (for a
 * person) and KEY_hex beside it holds every byte, two lowercase hex
 * digits each (for a program). So a reader takes KEY_hex when present,
 * else KEY encoded as UTF-8, and gets the bytes back exactly.
 */
#ifndef ZONEFUSE_ZJSON_H
#define ZONEFUSE_ZJSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/*
 * Whether @s (@len bytes) is valid UTF-8 as RFC 3629 has it: no overlong
 * forms, no surrogates, nothing above U+10FFFF, no NUL.
 */
bool zjson_utf8_valid(const char *s, size_t len);

/*
 * Set @key of @obj to the bytes @s (@len) in the encoding above (KEY and,
 * for bytes that are not UTF-8, KEY_hex). @key is at most 59 bytes.
 * 0, or -ENOMEM.
 */
int zjson_set_bytes(json_t *obj, const char *key, const char *s, size_t len);
/* zjson_set_bytes() of a NUL-terminated string. */
int zjson_set_str(json_t *obj, const char *key, const char *s);
/* Set @key to an unsigned count (null above INT64_MAX). 0 or -ENOMEM. */
int zjson_set_u64(json_t *obj, const char *key, uint64_t v);
/* Set @key to @v rounded to @decimals places (a number). 0 or -ENOMEM. */
int zjson_set_real(json_t *obj, const char *key, double v, int decimals);
/* Set @key to a new array of @n unsigned numbers. 0 or -ENOMEM. */
int zjson_set_u32s(json_t *obj, const char *key, const uint32_t *v,
		   size_t n);

/*
 * @v as one line of text (no newline) into @buf: the length, or -ERANGE
 * when it does not fit (@buf then holds nothing useful), or -ENOMEM.
 */
ssize_t zjson_dumpb(const json_t *v, char *buf, size_t size);
/* @v as one line and a newline on @f. 0, -ENOMEM or -EIO. */
int zjson_print(FILE *f, const json_t *v);

/*
 * One document whose last member is a list written item by item: the
 * members of @head, then "@key": [ the items ] and the closing brace.
 * zjson_list_begin() writes the head, zjson_list_item() one item (the
 * caller keeps its reference), zjson_list_end() the end and a newline.
 * Each returns 0, -ENOMEM or -EIO.
 */
struct zjson_list {
	FILE *f;
	unsigned long n; /* items written */
};

int zjson_list_begin(struct zjson_list *l, FILE *f, const json_t *head,
		     const char *key);
int zjson_list_item(struct zjson_list *l, const json_t *item);
int zjson_list_end(struct zjson_list *l);

#endif /* ZONEFUSE_ZJSON_H */
