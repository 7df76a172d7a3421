/* SPDX-License-Identifier: GPL-2.0-or-later */
/* CRC32C (Castagnoli), the checksum of every on-disk structure. */
#ifndef ZONEFUSE_CRC32C_H
#define ZONEFUSE_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Continue a CRC32C over @len bytes of @buf. Start with crc = 0; the
 * pre- and post-inversion are done inside, so crc32c(crc32c(0, a), b) is
 * the CRC of a followed by b. crc32c(0, "123456789", 9) == 0xe3069283.
 */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

/*
 * The implementations crc32c() chooses from, once, at load: the faster on
 * this CPU of those it has. Both give the same CRC.
 */
enum crc32c_impl {
	CRC32C_TABLES, /* eight tables, eight bytes a step: any CPU */
	CRC32C_SSE42,  /* the x86 crc32 instruction, three lanes at once */
};
/* Does this CPU have @impl? */
bool crc32c_have(enum crc32c_impl impl);
/* The one crc32c() uses. */
enum crc32c_impl crc32c_impl(void);
/* crc32c() with @impl (the tables if this CPU does not have it). */
uint32_t crc32c_with(enum crc32c_impl impl, uint32_t crc, const void *buf,
		     size_t len);

#endif /* ZONEFUSE_CRC32C_H */
