/* SPDX-License-Identifier: GPL-2.0-or-later */
/* CRC32C (Castagnoli), the checksum of every on-disk structure. */
#ifndef ZONEFUSE_CRC32C_H
#define ZONEFUSE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/*
 * Continue a CRC32C over @len bytes of @buf. Start with crc = 0; the
 * pre- and post-inversion are done inside, so crc32c(crc32c(0, a), b) is
 * the CRC of a followed by b. crc32c(0, "123456789", 9) == 0xe3069283.
 */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

#endif /* ZONEFUSE_CRC32C_H */
