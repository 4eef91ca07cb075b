/* The codec libraries compiled in (setup.py defines KW_HAVE_ZLIB and KW_HAVE_SNAPPY for the system
 * libraries its probes find, KW_HAVE_LZ4 and KW_HAVE_ZSTD for the vendored liblz4 and libzstd, the
 * releases the pure path's cramjam bundles: kafkawire/_native_src/vendor) and Kafka's codec ids (compression.py's GZIP..ZSTD),
 * shared by decompress.c and compress.c. */
#ifndef KAFKAWIRE_CODECS_H
#define KAFKAWIRE_CODECS_H

#include "records.h"

#ifdef KW_HAVE_ZLIB
#include <zlib.h>
#endif
#ifdef KW_HAVE_SNAPPY
#include <snappy-c.h>
#endif
#ifdef KW_HAVE_LZ4
#include <lz4.h>
#include <lz4hc.h>
#endif
#ifdef KW_HAVE_ZSTD
#include <zstd.h>
#endif

enum { GZIP = 1, SNAPPY = 2, LZ4 = 3, ZSTD = 4 };

#endif
