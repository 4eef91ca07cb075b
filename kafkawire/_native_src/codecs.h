/* The codec libraries compiled in (setup.py defines KW_HAVE_ZLIB, KW_HAVE_SNAPPY, KW_HAVE_LZ4 and
 * KW_HAVE_ZSTD for those its probes find) and Kafka's codec ids (compression.py's GZIP..ZSTD),
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
#endif
#ifdef KW_HAVE_ZSTD
#include <zstd.h>
#endif

enum { GZIP = 1, SNAPPY = 2, LZ4 = 3, ZSTD = 4 };

#endif
