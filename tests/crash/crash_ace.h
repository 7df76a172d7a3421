/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What crash_ace.c and crash_kill.c share. */
#ifndef ZONEFUSE_TESTS_CRASH_ACE_H
#define ZONEFUSE_TESTS_CRASH_ACE_H

#include <stddef.h>
#include <stdint.h>

/* Create an emulator image @img of @zones zones and mkfs it. 0 or -errno. */
int ace_make_image(const char *img, uint32_t zones, uint64_t zone_size,
		   char *err, size_t errlen);

/* `crash_ace replay|writer|verify ...`: the kill-test tools. */
int crash_kill_main(int argc, char **argv);

#endif /* ZONEFUSE_TESTS_CRASH_ACE_H */
