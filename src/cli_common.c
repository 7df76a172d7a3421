// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "cli.h"
#include "zonefuse/util.h"

void cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "zonefuse %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_open_dev(const char *cmd, const char *path, unsigned int flags,
		 struct zdev **devp)
{
	char err[512] = "";
	int ret = zdev_open(path, flags, devp, err, sizeof(err));

	if (ret)
		cli_error(cmd, "%s", err[0] ? err : "cannot open the device");
	return ret;
}

int cli_size_arg(const char *cmd, const char *opt, const char *val,
		 uint64_t *out)
{
	if (zutil_parse_size(val, out)) {
		cli_error(cmd,
			  "%s: '%s' is not a size (use a number with an optional K, M, G or T suffix)",
			  opt, val ? val : "");
		return -EINVAL;
	}
	return 0;
}

int cli_u32_arg(const char *cmd, const char *opt, const char *val,
		uint32_t *out)
{
	if (zutil_parse_u32(val, out)) {
		cli_error(cmd, "%s: '%s' is not a number", opt,
			  val ? val : "");
		return -EINVAL;
	}
	return 0;
}

void cli_json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}
