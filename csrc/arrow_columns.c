/*
 * sq_arrow_columns: an SQLite aggregate that packs a range of events into
 * Arrow column buffers in C, so the Spark source's bulk read builds no
 * Python object per row (spark_queue/store/streams/columnar.py reads the
 * blob it returns; BENCHMARKS.md "Spark source" has the numbers).
 *
 * A loadable extension: every SQLite call goes through the routines of the
 * connection that loads it (SQLITE_EXTENSION_INIT), never a second SQLite
 * library, whose close would drop the file's POSIX locks
 * (tests/store/streams/test_columnar_read.py checks the process maps no other).
 *
 * sq_arrow_columns(kinds, first, offset, ts_ms, col...):
 *   kinds   one letter per col: 'b' BLOB or NULL, 't' TEXT or NULL
 *   first   the offset the first row must have; each next row +1
 *   offset, ts_ms   INTEGER
 * Returns NULL ("not for me": the caller reads the old way, which names any
 * fault) when a row is out of order, a value has another type, or a column
 * outgrows Arrow's 32-bit offsets; else one BLOB, little-endian int64 words:
 *   n, ncols, then per col (null_count, data_bytes), then 8-byte aligned
 *   sections: offset int64[n], ts_ms int64[n], then per col validity bitmap
 *   (ceil(n/8) bytes), offsets int32[n+1], data.
 */
#include "sqlite3ext.h"
SQLITE_EXTENSION_INIT1
#include <stdint.h>
#include <string.h>

#define MAX_COLS 4

typedef struct {
  unsigned char *p;
  sqlite3_int64 len, cap;
} Buf;

typedef struct {
  int started, failed, ncols;
  char kinds[MAX_COLS];
  sqlite3_int64 n, next_offset, nulls[MAX_COLS];
  Buf offset, ts, valid[MAX_COLS], offsets[MAX_COLS], data[MAX_COLS];
} Acc;

static int grow(Buf *b, sqlite3_int64 more) {
  if (b->len + more <= b->cap) return 1;
  sqlite3_int64 cap = b->cap ? b->cap : 4096;
  while (cap < b->len + more) cap *= 2;
  unsigned char *p = sqlite3_realloc64(b->p, (sqlite3_uint64)cap);
  if (!p) return 0;
  b->p = p;
  b->cap = cap;
  return 1;
}

static int put(Buf *b, const void *src, sqlite3_int64 size) {
  if (!grow(b, size)) return 0;
  if (size) memcpy(b->p + b->len, src, (size_t)size);
  b->len += size;
  return 1;
}

static void release(Acc *a) {
  sqlite3_free(a->offset.p);
  sqlite3_free(a->ts.p);
  for (int c = 0; c < MAX_COLS; c++) {
    sqlite3_free(a->valid[c].p);
    sqlite3_free(a->offsets[c].p);
    sqlite3_free(a->data[c].p);
  }
  memset(a, 0, sizeof *a);
}

static int start(Acc *a, int argc, sqlite3_value **argv) {
  if (argc < 4) return 0;
  const unsigned char *kinds = sqlite3_value_text(argv[0]);
  int ncols = argc - 4;
  if (!kinds || (int)strlen((const char *)kinds) != ncols || ncols < 0 || ncols > MAX_COLS)
    return 0;
  a->ncols = ncols;
  memcpy(a->kinds, kinds, (size_t)ncols);
  a->next_offset = sqlite3_value_int64(argv[1]);
  for (int c = 0; c < ncols; c++) {
    int32_t zero = 0;
    if (a->kinds[c] != 'b' && a->kinds[c] != 't') return 0;
    if (!put(&a->offsets[c], &zero, 4)) return -1;
  }
  return 1;
}

static void step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  Acc *a = sqlite3_aggregate_context(ctx, sizeof(Acc));
  if (!a) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  if (a->failed) return;
  if (!a->started) {
    int ok = start(a, argc, argv);
    if (ok < 0) goto nomem;
    a->started = 1;
    if (!ok) {
      a->failed = 1;
      return;
    }
  }
  if (sqlite3_value_type(argv[2]) != SQLITE_INTEGER || sqlite3_value_type(argv[3]) != SQLITE_INTEGER
      || sqlite3_value_int64(argv[2]) != a->next_offset) {
    a->failed = 1;
    return;
  }
  sqlite3_int64 offset = a->next_offset++;
  sqlite3_int64 ts = sqlite3_value_int64(argv[3]);
  if (!put(&a->offset, &offset, 8) || !put(&a->ts, &ts, 8)) goto nomem;
  for (int c = 0; c < a->ncols; c++) {
    sqlite3_value *v = argv[4 + c];
    int type = sqlite3_value_type(v);
    Buf *valid = &a->valid[c];
    if (a->n % 8 == 0) {
      unsigned char zero = 0;
      if (!put(valid, &zero, 1)) goto nomem;
    }
    if (type != SQLITE_NULL) {
      const void *bytes;
      if (a->kinds[c] == 'b' && type == SQLITE_BLOB) bytes = sqlite3_value_blob(v);
      else if (a->kinds[c] == 't' && type == SQLITE_TEXT) bytes = sqlite3_value_text(v);
      else {
        a->failed = 1;
        return;
      }
      sqlite3_int64 size = sqlite3_value_bytes(v);
      if (size && !bytes) goto nomem;
      if (a->data[c].len + size > INT32_MAX) {
        a->failed = 1;
        return;
      }
      if (!put(&a->data[c], bytes, size)) goto nomem;
      valid->p[a->n / 8] |= (unsigned char)(1u << (a->n % 8));
    } else {
      a->nulls[c]++;
    }
    int32_t end = (int32_t)a->data[c].len;
    if (!put(&a->offsets[c], &end, 4)) goto nomem;
  }
  a->n++;
  return;
nomem:
  a->failed = 1;
  sqlite3_result_error_nomem(ctx);
}

static sqlite3_int64 padded(sqlite3_int64 size) { return (size + 7) & ~(sqlite3_int64)7; }

static void final(sqlite3_context *ctx) {
  Acc *a = sqlite3_aggregate_context(ctx, 0);
  if (!a || !a->started || a->failed) {
    sqlite3_result_null(ctx);
    if (a) release(a);
    return;
  }
  sqlite3_int64 header = 8 * (2 + 2 * a->ncols);
  sqlite3_int64 total = header + padded(a->offset.len) + padded(a->ts.len);
  for (int c = 0; c < a->ncols; c++)
    total += padded(a->valid[c].len) + padded(a->offsets[c].len) + padded(a->data[c].len);
  unsigned char *out = sqlite3_malloc64((sqlite3_uint64)total);
  if (!out) {
    release(a);
    sqlite3_result_error_nomem(ctx);
    return;
  }
  memset(out, 0, (size_t)total);
  sqlite3_int64 *words = (sqlite3_int64 *)out;
  words[0] = a->n;
  words[1] = a->ncols;
  for (int c = 0; c < a->ncols; c++) {
    words[2 + 2 * c] = a->nulls[c];
    words[3 + 2 * c] = a->data[c].len;
  }
  sqlite3_int64 at = header;
  Buf *ints[2] = {&a->offset, &a->ts};
  for (int i = 0; i < 2; i++) {
    if (ints[i]->len) memcpy(out + at, ints[i]->p, (size_t)ints[i]->len);
    at += padded(ints[i]->len);
  }
  for (int c = 0; c < a->ncols; c++) {
    Buf *parts[3] = {&a->valid[c], &a->offsets[c], &a->data[c]};
    for (int i = 0; i < 3; i++) {
      if (parts[i]->len) memcpy(out + at, parts[i]->p, (size_t)parts[i]->len);
      at += padded(parts[i]->len);
    }
  }
  release(a);
  /* SQLite frees `out` with sqlite3_free, also when it is too big (SQLITE_TOOBIG). */
  sqlite3_result_blob64(ctx, out, (sqlite3_uint64)total, sqlite3_free);
}

#ifdef _WIN32
__declspec(dllexport)
#endif
int sqlite3_arrowcolumns_init(sqlite3 *db, char **err, const sqlite3_api_routines *api) {
  (void)err;
  SQLITE_EXTENSION_INIT2(api);
  return sqlite3_create_function_v2(db, "sq_arrow_columns", -1, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                    0, 0, step, final, 0);
}
