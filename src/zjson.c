// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * JSON output on jansson. Why jansson rather than json-c, the other
 * maintained JSON library Debian ships: jansson refuses a string that is
 * not valid UTF-8 (json_stringn() returns NULL), so a name that escaped
 * our encoding could not reach the output as raw bytes, which is the bug
 * this module exists to end; json-c takes any bytes and writes them out.
 * jansson also keeps the members in the order they were set, and writes
 * the ", " and ": " separators the hand-written output had, so the
 * documents read as before.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zonefuse/zjson.h"

/* One line, members in the order set, reals with 10 significant digits. */
#define ZJSON_FLAGS (JSON_REAL_PRECISION(10) | JSON_ENCODE_ANY)

/* The length of the UTF-8 sequence at @s (at most @len bytes), or 0. */
static size_t zjson_utf8_seq(const unsigned char *s, size_t len)
{
	uint32_t cp;
	size_t n, i;

	if (s[0] >= 0x01 && s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0; /* NUL, a continuation byte, 0xc0, 0xc1, 0xf5-0xff */
	if (n > len)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

bool zjson_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, n;

	while (i < len) {
		n = zjson_utf8_seq(p + i, len - i);
		if (!n)
			return false;
		i += n;
	}
	return true;
}

/*
 * Bytes that are not UTF-8: KEY gets them with each invalid byte as
 * U+FFFD, KEY_hex all of them.
 */
static int zjson_set_invalid(json_t *obj, const char *key, const char *s,
			     size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	char hkey[64], *shown, *h;
	size_t i, o = 0, n;
	int ret = -ENOMEM;

	if (snprintf(hkey, sizeof(hkey), "%s_hex", key) >= (int)sizeof(hkey))
		return -EINVAL;
	shown = malloc(len * 3 + 1);
	h = malloc(len * 2 + 1);
	if (!shown || !h)
		goto out_free;
	for (i = 0; i < len; i += n) {
		n = zjson_utf8_seq(p + i, len - i);
		if (n) {
			memcpy(shown + o, p + i, n);
			o += n;
		} else {
			memcpy(shown + o, "\xef\xbf\xbd", 3); /* U+FFFD */
			o += 3;
			n = 1;
		}
	}
	for (i = 0; i < len; i++) {
		h[2 * i] = hex[p[i] >> 4];
		h[2 * i + 1] = hex[p[i] & 0xf];
	}
	h[2 * len] = '\0';
	if (!json_object_set_new(obj, key, json_stringn(shown, o)) &&
	    !json_object_set_new(obj, hkey, json_string(h)))
		ret = 0;
out_free:
	free(h);
	free(shown);
	return ret;
}

int zjson_set_bytes(json_t *obj, const char *key, const char *s, size_t len)
{
	if (!zjson_utf8_valid(s, len))
		return zjson_set_invalid(obj, key, s, len);
	return json_object_set_new(obj, key, json_stringn(s, len)) ? -ENOMEM :
								      0;
}

int zjson_set_str(json_t *obj, const char *key, const char *s)
{
	return zjson_set_bytes(obj, key, s, strlen(s));
}

int zjson_set_u64(json_t *obj, const char *key, uint64_t v)
{
	json_t *n = v > INT64_MAX ? json_null() : json_integer((json_int_t)v);

	return json_object_set_new(obj, key, n) ? -ENOMEM : 0;
}

int zjson_set_real(json_t *obj, const char *key, double v, int decimals)
{
	double scale = pow(10, decimals);

	return json_object_set_new(obj, key, json_real(round(v * scale) / scale)) ?
		       -ENOMEM :
		       0;
}

int zjson_set_u32s(json_t *obj, const char *key, const uint32_t *v, size_t n)
{
	json_t *a = json_array();
	size_t i;

	if (!a)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (json_array_append_new(a, json_integer(v[i]))) {
			json_decref(a);
			return -ENOMEM;
		}
	}
	return json_object_set_new(obj, key, a) ? -ENOMEM : 0;
}

ssize_t zjson_dumpb(const json_t *v, char *buf, size_t size)
{
	size_t n = json_dumpb(v, buf, size ? size - 1 : 0, ZJSON_FLAGS);

	if (!n)
		return -ENOMEM;
	if (n >= size)
		return -ERANGE;
	buf[n] = '\0';
	return (ssize_t)n;
}

int zjson_print(FILE *f, const json_t *v)
{
	if (json_dumpf(v, f, ZJSON_FLAGS))
		return -ENOMEM;
	return fputc('\n', f) == EOF ? -EIO : 0;
}

int zjson_list_begin(struct zjson_list *l, FILE *f, const json_t *head,
		     const char *key)
{
	json_t *k = json_string(key);
	char *h = json_dumps(head, ZJSON_FLAGS), *ks = NULL;
	size_t hl = h ? strlen(h) : 0;
	int ret = -ENOMEM;

	l->f = f;
	l->n = 0;
	if (k)
		ks = json_dumps(k, ZJSON_FLAGS);
	if (!ks || hl < 2 || h[hl - 1] != '}')
		goto out_free;
	/* The head without its closing brace, then the list's key. */
	h[hl - 1] = '\0';
	ret = fprintf(f, "%s%s%s: [", h, hl > 2 ? ", " : "", ks) < 0 ? -EIO :
								       0;
out_free:
	free(ks);
	free(h);
	json_decref(k);
	return ret;
}

int zjson_list_item(struct zjson_list *l, const json_t *item)
{
	if (l->n++ && fputs(",\n", l->f) == EOF)
		return -EIO;
	return json_dumpf(item, l->f, ZJSON_FLAGS) ? -EIO : 0;
}

int zjson_list_end(struct zjson_list *l)
{
	return fputs("]}\n", l->f) == EOF ? -EIO : 0;
}
