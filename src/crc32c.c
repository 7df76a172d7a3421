// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * CRC32C. Two implementations, and crc32c() uses the faster of them on the
 * CPU it runs on, timed once at load:
 * - the SSE4.2 crc32 instruction: one instruction has a latency of 3
 *   cycles and a throughput of 1, so long buffers run three independent
 *   lanes at once and join them (crc32c_xpow8n(), crc32c_mulmod(): CRCs
 *   are linear, the CRC of A followed by B is A's shifted by B's length,
 *   xor B's from zero).
 *   One 4 KiB block is three lanes of 1360 bytes and a 16-byte tail.
 *   18 GB/s on this project's machine;
 * - eight tables, eight bytes a step ("slicing by 8"): 1.9 GB/s there.
 * Every block of file data is checksummed at writeback and at every read,
 * so the choice matters, and the instruction is not always the faster:
 * under QEMU's TCG (the zoned guests of scripts/zoned-vm.sh, `-cpu max`)
 * each crc32 is a call into the emulator, 152 MB/s against the tables'
 * 604, and the near-full benchmark's fsyncs spent 1.77 ms of their 4.13
 * on checksums (docs/performance.md). Both give the same CRC; tests check
 * each against the bit-wise definition.
 */
#include "zonefuse/crc32c.h"

#include <endian.h>
#include <string.h>
#include <time.h>

#define CRC32C_POLY 0x82f63b78u /* reflected */

/*
 * crc32c_table8[0][b] is byte b's CRC (the byte-wise table),
 * crc32c_table8[k][b] that CRC followed by k zero bytes; filled in at load.
 */
static uint32_t crc32c_table8[8][256];

static uint32_t crc32c_sw(uint32_t crc, const unsigned char *p, size_t len)
{
	const uint32_t(*t)[256] = (const uint32_t(*)[256])crc32c_table8;

	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		v = le64toh(v) ^ crc;
		crc = t[7][v & 0xff] ^ t[6][(v >> 8) & 0xff] ^
		      t[5][(v >> 16) & 0xff] ^ t[4][(v >> 24) & 0xff] ^
		      t[3][(v >> 32) & 0xff] ^ t[2][(v >> 40) & 0xff] ^
		      t[1][(v >> 48) & 0xff] ^ t[0][v >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = t[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

static void crc32c_tables(void)
{
	uint32_t(*t)[256] = crc32c_table8;
	unsigned int i, k;

	for (i = 0; i < 256; i++) {
		uint32_t c = i;

		for (k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
		t[0][i] = c;
	}
	for (k = 1; k < 8; k++)
		for (i = 0; i < 256; i++)
			t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
}

#if defined(__x86_64__)
#define CRC32C_LANE 1360u /* bytes per lane: 3 of them and 16 make 4 KiB */

/* a(x) * b(x) mod P(x), reflected (bit 31 is x^0); a must not be 0. */
static uint32_t crc32c_mulmod(uint32_t a, uint32_t b)
{
	uint32_t m = 1u << 31, prod = 0;

	for (;;) {
		if (a & m) {
			prod ^= b;
			if (!(a & (m - 1)))
				break;
		}
		m >>= 1;
		b = b & 1 ? (b >> 1) ^ CRC32C_POLY : b >> 1;
	}
	return prod;
}

/* x^(8 * @n) mod P: what appending @n zero bytes multiplies a CRC by. */
static uint32_t crc32c_xpow8n(uint64_t n)
{
	uint32_t sq = 1u << 30, p = 1u << 31; /* x^1, x^0 */
	uint64_t e = n * 8;

	while (e) {
		if (e & 1)
			p = crc32c_mulmod(sq, p);
		sq = crc32c_mulmod(sq, sq);
		e >>= 1;
	}
	return p;
}

/* Shifts of a lane's CRC past one and two more lanes: set once, at load. */
static uint32_t crc32c_k1, crc32c_k2;

__attribute__((target("sse4.2"))) static uint32_t
crc32c_hw(uint32_t crc, const unsigned char *p, size_t len)
{
	uint64_t c = crc;

	while (len >= 3 * CRC32C_LANE) {
		uint64_t c1 = 0, c2 = 0, v0, v1, v2;
		size_t i;

		for (i = 0; i < CRC32C_LANE; i += 8) {
			memcpy(&v0, p + i, 8);
			memcpy(&v1, p + CRC32C_LANE + i, 8);
			memcpy(&v2, p + 2 * CRC32C_LANE + i, 8);
			c = __builtin_ia32_crc32di(c, v0);
			c1 = __builtin_ia32_crc32di(c1, v1);
			c2 = __builtin_ia32_crc32di(c2, v2);
		}
		c = crc32c_mulmod(crc32c_k2, (uint32_t)c) ^
		    crc32c_mulmod(crc32c_k1, (uint32_t)c1) ^ (uint32_t)c2;
		p += 3 * CRC32C_LANE;
		len -= 3 * CRC32C_LANE;
	}
	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		len -= 8;
	}
	crc = (uint32_t)c;
	while (len--)
		crc = __builtin_ia32_crc32qi(crc, *p++);
	return crc;
}

static bool crc32c_have_hw(void)
{
	return __builtin_cpu_supports("sse4.2");
}
#else
static bool crc32c_have_hw(void)
{
	return false;
}
#endif

/* The implementation crc32c() uses: set once, at load. */
static enum crc32c_impl crc32c_chosen = CRC32C_TABLES;

/*
 * The least of 5 timings of @impl over 16 KiB (four 4 KiB blocks, as
 * writeback checksums them), in nanoseconds: the least, so that a
 * preemption in one timing does not decide.
 */
static uint64_t crc32c_time(enum crc32c_impl impl)
{
	static const unsigned char buf[16384];
	uint64_t best = UINT64_MAX;
	volatile uint32_t sink = 0;
	unsigned int r, b;

	for (r = 0; r < 5; r++) {
		struct timespec t0, t1;
		uint64_t ns;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (b = 0; b < sizeof(buf); b += 4096)
			sink ^= crc32c_with(impl, 0, buf + b, 4096);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u +
		     (uint64_t)t1.tv_nsec - (uint64_t)t0.tv_nsec;
		if (ns < best)
			best = ns;
	}
	(void)sink;
	return best;
}

__attribute__((constructor)) static void crc32c_init(void)
{
	crc32c_tables();
#if defined(__x86_64__)
	crc32c_k1 = crc32c_xpow8n(CRC32C_LANE);
	crc32c_k2 = crc32c_xpow8n(2 * CRC32C_LANE);
#endif
	if (crc32c_have_hw() &&
	    crc32c_time(CRC32C_SSE42) <= crc32c_time(CRC32C_TABLES))
		crc32c_chosen = CRC32C_SSE42;
}

bool crc32c_have(enum crc32c_impl impl)
{
	return impl == CRC32C_TABLES || (impl == CRC32C_SSE42 && crc32c_have_hw());
}

enum crc32c_impl crc32c_impl(void)
{
	return crc32c_chosen;
}

uint32_t crc32c_with(enum crc32c_impl impl, uint32_t crc, const void *buf,
		     size_t len)
{
#if defined(__x86_64__)
	if (impl == CRC32C_SSE42 && crc32c_have_hw())
		return ~crc32c_hw(~crc, buf, len);
#else
	(void)impl;
#endif
	return ~crc32c_sw(~crc, buf, len);
}

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	return crc32c_with(crc32c_chosen, crc, buf, len);
}
