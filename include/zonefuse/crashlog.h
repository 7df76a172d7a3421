/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The device recording format: what zdev_record() writes and crash_log_open()
 * reads. It is the history of one open of a device, in the order the device
 * completed it: every successful write with its data, every flush, every
 * zone reset and finish. From it and a copy of the device as it was when the
 * recording started, src/crash.c rebuilds what the device could hold after a
 * power cut at any moment of that history (include/zonefuse/crash.h).
 *
 * Layout: one header (128 bytes), then records back to back, each a 40-byte
 * head followed by `len` bytes of data (writes only; no padding). All
 * integers are little-endian and fixed-width.
 *
 * Each record's CRC32C covers its data first, then its head with the `crc`
 * field zeroed: the data's CRC can so be computed before the append lock is
 * taken. The reader stops at the first record whose magic, seq, type, length
 * or CRC is wrong, or which is cut short: that is the record a killed
 * process was appending, and nothing after it is used.
 *
 * Ordering: a WRITE is appended after the device completed it; a FLUSH when
 * the flush starts, before the device is asked, and a FLUSH_DONE naming it
 * (by seq, in `off`) when it returned. So every write before a FLUSH
 * completed before that flush began, and is durable from its FLUSH_DONE
 * on; a write that completes while a flush runs is logged after the FLUSH
 * and counts as not made durable by it (which may be pessimistic, never
 * optimistic). A flush that fails gets a FLUSH_FAILED instead: it made
 * nothing durable. RESET and FINISH are appended after they completed:
 * zone management is durable when it returns.
 */
#ifndef ZONEFUSE_CRASHLOG_H
#define ZONEFUSE_CRASHLOG_H

#include <stdint.h>

#define CRASHLOG_MAGIC "ZFCRLOG\0"
#define CRASHLOG_VERSION 1u
#define CRASHLOG_REC_MAGIC 0x52434c5au /* "ZLCR" */

/* File header, at offset 0. */
struct crashlog_hdr {
	char magic[8];	     /* 0: CRASHLOG_MAGIC */
	uint32_t version;    /* 8: CRASHLOG_VERSION */
	uint32_t hdr_size;   /* 12: 128 */
	uint32_t rec_size;   /* 16: 40, the size of a record head */
	uint32_t block_size; /* 20: the device's */
	uint64_t dev_size;   /* 24: bytes */
	uint64_t zone_size;  /* 32 */
	uint32_t nr_zones;   /* 40 */
	uint32_t nr_conv;    /* 44 */
	int64_t start_ns;    /* 48: real time when recording started */
	uint32_t pid;	     /* 56: the recording process */
	uint32_t reserved0;  /* 60: 0 */
	char dev_path[56];   /* 64: the device, NUL-padded (may be cut) */
	uint32_t reserved1;  /* 120: 0 */
	uint32_t crc;	     /* 124: CRC32C of bytes 0-123 */
};
_Static_assert(sizeof(struct crashlog_hdr) == 128, "crashlog header size");

enum crashlog_type {
	CRASHLOG_WRITE = 1,	   /* off, len, zone; then len bytes of data */
	CRASHLOG_FLUSH = 2,	   /* a flush started */
	CRASHLOG_RESET = 3,	   /* zone (off: its start) was reset */
	CRASHLOG_FINISH = 4,	   /* zone (off: its start) was finished */
	CRASHLOG_FLUSH_DONE = 5,   /* the FLUSH of seq `off` succeeded */
	CRASHLOG_FLUSH_FAILED = 6, /* the FLUSH of seq `off` failed */
};

/* Record head; `len` bytes of data follow a WRITE. */
struct crashlog_rec {
	uint32_t magic;	    /* 0: CRASHLOG_REC_MAGIC */
	uint32_t crc;	    /* 4: CRC32C of the data, then of this head
			       with crc zeroed */
	uint64_t seq;	    /* 8: 0 for the first record, then +1 each */
	uint64_t off;	    /* 16: device byte offset (WRITE, RESET,
			       FINISH), or the failed flush's seq */
	uint32_t len;	    /* 24: data bytes (WRITE), else 0 */
	uint32_t zone;	    /* 28: zone of off (WRITE, RESET, FINISH) */
	uint16_t type;	    /* 32: enum crashlog_type */
	uint16_t reserved0; /* 34: 0 */
	uint32_t reserved1; /* 36: 0 */
};
_Static_assert(sizeof(struct crashlog_rec) == 40, "crashlog record size");

#endif /* ZONEFUSE_CRASHLOG_H */
