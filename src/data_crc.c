// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The checksum helper: the CRC32Cs of a run of data computed on another
 * thread while the writer writes that run to its zone.
 *
 * Every block written carries its CRC32C in the EXTENT record that makes
 * it the file's (docs/format.md), so a writer used to write a run and then
 * checksum it, in series, on the path an fsync waits for. The two need
 * only the same bytes, unchanged (the chunk is the writeback's alone once
 * sealed, and data_rmw() has filled its edge blocks): while the device
 * takes the run, another CPU can checksum it. Measured on the emulated
 * NVMe ZNS namespace of a QEMU guest under TCG, where a CRC32C of 1 MiB
 * costs about as much as its write (the near-full small-file workload of
 * issue 26, pieces of 256 KiB or more: checksums 1.27 ms, the device
 * write 1.56 ms on average), the fsyncs that wrote them waited for both;
 * on a drive writing 3 GB/s the checksum of a MiB with the tables is a
 * third of its write. But the handoff costs a wakeup and the data's trip
 * to another core, tens of microseconds, and on a CPU with the crc32
 * instruction a MiB takes about 60: handed off there, one file written
 * through the RAM emulator lost 5-10 % (fio 1815-1871 against 1956-2194
 * MB/s). And on a slow CPU the handoff is dearer too: under TCG, handing
 * off runs from 64 KiB up took the gain of the large ones away (the
 * fsyncs' data part 1.8x their journal part, as without the helper,
 * against 1.4x with runs of 256 KiB and more only). So a run goes to the
 * helper when it is DATA_CRC_HANDOFF_MIN bytes or more and its checksums
 * would cost DATA_CRC_HANDOFF_NS or more here (crc32c_cost_ns(), timed
 * at load); otherwise the writer checksums it itself.
 *
 * A waiter whose job the helper has not begun takes it back and computes
 * it itself, so a busy or stopped helper never makes a writer wait longer
 * than checksumming its own run would: the helper only ever adds a CPU.
 */
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "data_i.h"
#include "zonefuse/crc32c.h"
#include "zonefuse/util.h"

#define DATA_CRC_HANDOFF_MIN (256u << 10)
#define DATA_CRC_HANDOFF_NS 100000u

static void data_crc_compute(const struct data_crc_job *j)
{
	uint32_t i;

	for (i = 0; i < j->nb; i++)
		j->csum[i] = htole32(crc32c(0, j->data + (size_t)i * j->bs,
					    j->bs));
}

static void *data_crc_main(void *arg)
{
	struct zfs *fs = arg;
	struct data_crc_job *j;

	pthread_setname_np(pthread_self(), "zf-crc");
	zlock_mutex(&fs->crc_lock, ZLOCK_CRC);
	for (;;) {
		j = fs->crc_queue;
		if (!j) {
			if (fs->crc_stop)
				break;
			pthread_cond_wait(&fs->crc_cv, &fs->crc_lock);
			continue;
		}
		fs->crc_queue = j->next;
		if (!fs->crc_queue)
			fs->crc_tail = NULL;
		j->state = DATA_CRC_RUNNING;
		zlock_unmutex(&fs->crc_lock);
		data_crc_compute(j);
		zlock_mutex(&fs->crc_lock, ZLOCK_CRC);
		j->state = DATA_CRC_DONE;
		pthread_cond_broadcast(&fs->crc_done);
	}
	zlock_unmutex(&fs->crc_lock);
	return NULL;
}

int data_crc_init(struct zfs *fs)
{
	int ret;

	fs->crc_stop = false;
	fs->crc_handoff_ns = DATA_CRC_HANDOFF_NS;
	ret = pthread_create(&fs->crc_thread, NULL, data_crc_main, fs);
	if (ret) {
		zlog_warn("%s: no checksum helper thread (%s): writers checksum their data themselves",
			  zdev_path(fs->dev), strerror(ret));
		return -ret;
	}
	fs->crc_up = true;
	return 0;
}

void data_crc_stop(struct zfs *fs)
{
	if (!fs->crc_up)
		return;
	zlock_mutex(&fs->crc_lock, ZLOCK_CRC);
	fs->crc_stop = true;
	pthread_cond_broadcast(&fs->crc_cv);
	zlock_unmutex(&fs->crc_lock);
	pthread_join(fs->crc_thread, NULL);
	fs->crc_up = false;
}

void data_crc_start(struct zfs *fs, struct data_crc_job *j, const char *data,
		    uint32_t nb, uint32_t bs, uint32_t *csum)
{
	j->data = data;
	j->nb = nb;
	j->bs = bs;
	j->csum = csum;
	j->next = NULL;
	j->state = DATA_CRC_MINE;
	if (!fs->crc_up || (uint64_t)nb * bs < DATA_CRC_HANDOFF_MIN ||
	    crc32c_cost_ns((size_t)nb * bs) < fs->crc_handoff_ns)
		return;
	zlock_mutex(&fs->crc_lock, ZLOCK_CRC);
	j->state = DATA_CRC_QUEUED;
	if (fs->crc_tail)
		fs->crc_tail->next = j;
	else
		fs->crc_queue = j;
	fs->crc_tail = j;
	pthread_cond_signal(&fs->crc_cv);
	zlock_unmutex(&fs->crc_lock);
}

void data_crc_wait(struct zfs *fs, struct data_crc_job *j)
{
	struct data_crc_job **pp;

	if (j->state == DATA_CRC_MINE) {
		data_crc_compute(j);
		j->state = DATA_CRC_DONE;
		return;
	}
	zlock_mutex(&fs->crc_lock, ZLOCK_CRC);
	if (j->state == DATA_CRC_QUEUED) {
		/* Not begun: take it back (the queue is short: one per writer). */
		for (pp = &fs->crc_queue; *pp != j; pp = &(*pp)->next)
			;
		*pp = j->next;
		if (fs->crc_tail == j) {
			struct data_crc_job *t = fs->crc_queue;

			while (t && t->next)
				t = t->next;
			fs->crc_tail = t;
		}
		zlock_unmutex(&fs->crc_lock);
		data_crc_compute(j);
		j->state = DATA_CRC_DONE; /* out of the queue: the caller's alone */
		return;
	}
	while (j->state != DATA_CRC_DONE)
		pthread_cond_wait(&fs->crc_done, &fs->crc_lock);
	zlock_unmutex(&fs->crc_lock);
}
