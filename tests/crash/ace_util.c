// SPDX-License-Identifier: GPL-2.0-or-later
/* What the harness's parts share (ace.h): the caller, memory, extents. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "ace.h"

const struct zfs_ctx ace_ctx = { .uid = 0, .gid = 0, .umask = 022 };

void *ace_xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p) {
		fprintf(stderr, "crash_ace: out of memory\n");
		abort();
	}
	return p;
}

bool ace_extent_parse(const char *line, struct ace_extent *e)
{
	return sscanf(line,
		      "zone %u offset %" SCNu64 " length %" SCNu64
		      " file_offset %" SCNu64,
		      &e->zone, &e->off, &e->len, &e->foff) == 4;
}
