// SPDX-License-Identifier: GPL-2.0-or-later
/* zonefuse zones DEVICE [--json]: a zone report like blkzone report. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "zonefuse/util.h"
#include "zonefuse/zjson.h"

static void zones_usage(FILE *f)
{
	fprintf(f,
		"usage: zonefuse zones DEVICE [--json]\n"
		"Report the zones of a zoned block device or an emulator image:\n"
		"start, length, capacity, write pointer, condition, type and resets.\n"
		"On a mounted emulator image it shows the state as last flushed.\n");
}

static void zones_text(const struct zdev *dev, const struct zdev_zone *z,
		       uint32_t nr)
{
	const struct zdev_geom *g = zdev_geom(dev);
	char a[32];
	uint32_t i;

	printf("%s: %s, %u zones of %s, block size %u, %u conventional, max open %u, max active %u, %s write cache\n",
	       zdev_path(dev), zdev_backend(dev), g->nr_zones,
	       zutil_size_str(g->zone_size, a, sizeof(a)), g->block_size,
	       g->nr_conv, g->max_open, g->max_active,
	       g->volatile_cache ? "volatile" : "no volatile");
	printf("%6s %14s %12s %12s %14s %-14s %-4s %s\n", "zone", "start",
	       "len", "capacity", "wp", "cond", "type", "resets");
	for (i = 0; i < nr; i++) {
		char resets[24] = "-";

		if (z[i].resets != ZDEV_RESETS_UNKNOWN)
			snprintf(resets, sizeof(resets), "%" PRIu64,
				 z[i].resets);
		printf("%6u 0x%012" PRIx64 " %12" PRIu64 " %12" PRIu64
		       " 0x%012" PRIx64 " %-14s %-4s %s\n",
		       i, z[i].start, z[i].len, z[i].capacity, z[i].wp,
		       zdev_cond_name(z[i].cond),
		       z[i].type == ZDEV_ZONE_CONV ? "conv" : "seq", resets);
	}
}

/* The head, then one zone a line (as the text report has them). */
static int zones_json(const struct zdev *dev, const struct zdev_zone *z,
		      uint32_t nr)
{
	const struct zdev_geom *g = zdev_geom(dev);
	json_t *o = json_object(), *e = NULL;
	struct zjson_list l;
	int ret = -ENOMEM;
	uint32_t i;

	if (!o || zjson_set_str(o, "device", zdev_path(dev)) ||
	    zjson_set_str(o, "backend", zdev_backend(dev)) ||
	    zjson_set_u64(o, "zone_size", g->zone_size) ||
	    zjson_set_u64(o, "nr_zones", g->nr_zones) ||
	    zjson_set_u64(o, "block_size", g->block_size) ||
	    zjson_set_u64(o, "max_open", g->max_open) ||
	    zjson_set_u64(o, "max_active", g->max_active) ||
	    json_object_set_new(o, "volatile_cache",
				json_boolean(g->volatile_cache)))
		goto out_put;
	ret = zjson_list_begin(&l, stdout, o, "zones");
	for (i = 0; !ret && i < nr; i++) {
		e = json_object();
		ret = -ENOMEM;
		if (!e || zjson_set_u64(e, "index", i) ||
		    zjson_set_u64(e, "start", z[i].start) ||
		    zjson_set_u64(e, "len", z[i].len) ||
		    zjson_set_u64(e, "capacity", z[i].capacity) ||
		    zjson_set_u64(e, "wp", z[i].wp) ||
		    zjson_set_str(e, "cond", zdev_cond_name(z[i].cond)) ||
		    zjson_set_str(e, "type", z[i].type == ZDEV_ZONE_CONV ?
							"conv" :
							"seq") ||
		    (z[i].resets == ZDEV_RESETS_UNKNOWN ?
			     json_object_set_new(e, "resets", json_null()) :
			     zjson_set_u64(e, "resets", z[i].resets)))
			goto out_put;
		ret = zjson_list_item(&l, e);
		json_decref(e);
		e = NULL;
	}
	if (!ret)
		ret = zjson_list_end(&l);
out_put:
	json_decref(e);
	json_decref(o);
	return ret;
}

int cli_zones(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct zdev_zone *zones;
	struct zdev *dev;
	bool json = false;
	uint32_t nr;
	int c, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'V':
			return cli_version();
		case 'h':
			zones_usage(stdout);
			return 0;
		default:
			zones_usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		cli_error("zones", "expected one DEVICE");
		zones_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (cli_open_dev("zones", argv[optind], ZDEV_RDONLY, &dev))
		return 1;
	nr = zdev_geom(dev)->nr_zones;
	zones = calloc(nr, sizeof(*zones));
	if (!zones) {
		cli_error("zones", "out of memory");
		zdev_close(dev);
		return 1;
	}
	ret = zdev_report(dev, 0, nr, zones);
	if (ret < 0) {
		cli_error("zones", "%s: zone report failed: %s", argv[optind],
			  strerror(-ret));
		ret = 1;
		goto out;
	}
	if (!json) {
		zones_text(dev, zones, (uint32_t)ret);
		ret = 0;
	} else if (zones_json(dev, zones, (uint32_t)ret)) {
		cli_error("zones", "writing the JSON report failed");
		ret = 1;
	} else {
		ret = 0;
	}
out:
	free(zones);
	zdev_close(dev);
	return ret;
}
