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
 * sq_arrow_columns(kinds, first, expected, offset, ts_ms, col...):
 *   kinds     one letter per col: 'b' BLOB or NULL, 't' TEXT or NULL
 *   first     the offset the first row must have; each next row +1
 *   expected  how many rows the caller expects: the fixed-width buffers are
 *             sized for them once (a wrong guess costs only a regrowth)
 *   offset, ts_ms   INTEGER
 * Returns NULL ("not for me": the caller reads the old way, which names any
 * fault) when a row is out of order, a value has another type, or a column
 * outgrows Arrow's 32-bit offsets; else one BLOB of 8-byte aligned sections
 * in any order, described by a trailer of little-endian int64 words at its
 * end:
 *   n, ncols, offset_at, ts_at, then per col (null_count, data_bytes,
 *   validity_at, offsets_at, data_at), then the trailer's own word count.
 * Sections: offset int64[n], ts_ms int64[n], per col validity bitmap
 * (ceil(n/8) bytes), offsets int32[n+1], data.
 *
 * Why a trailer: the largest data buffer becomes the result itself, grown in
 * place to take the small sections after it, so the payload bytes are copied
 * once from SQLite's pages and never again here (a fresh result buffer cost a
 * copy, a zeroing and its page faults: a third of the aggregate's time).
 */
#include "sqlite3ext.h"
SQLITE_EXTENSION_INIT1
#include <stdint.h>
#include <string.h>

#define MAX_COLS 4
#define FIXED_ARGS 5
/* A first row's size times the expected rows reserves a data buffer up to this. */
#define MAX_DATA_RESERVE ((sqlite3_int64)64 << 20)

typedef struct {
  unsigned char *p;
  sqlite3_int64 len, cap;
} Buf;

typedef struct {
  int started, failed, ncols;
  char kinds[MAX_COLS];
  sqlite3_int64 n, expected, next_offset, nulls[MAX_COLS];
  Buf offset, ts, valid[MAX_COLS], offsets[MAX_COLS], data[MAX_COLS];
} Acc;

static int reserve(Buf *b, sqlite3_int64 cap) {
  if (cap <= b->cap) return 1;
  unsigned char *p = sqlite3_realloc64(b->p, (sqlite3_uint64)cap);
  if (!p) return 0;
  b->p = p;
  b->cap = cap;
  return 1;
}

static int grow(Buf *b, sqlite3_int64 more) {
  if (b->len + more <= b->cap) return 1;
  sqlite3_int64 cap = b->cap ? b->cap : 4096;
  while (cap < b->len + more) cap *= 2;
  return reserve(b, cap);
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

/* 1: ready; 0: arguments not for this aggregate; -1: out of memory. */
static int start(Acc *a, int argc, sqlite3_value **argv) {
  if (argc < FIXED_ARGS) return 0;
  const unsigned char *kinds = sqlite3_value_text(argv[0]);
  int ncols = argc - FIXED_ARGS;
  if (!kinds || (int)strlen((const char *)kinds) != ncols || ncols > MAX_COLS) return 0;
  a->ncols = ncols;
  memcpy(a->kinds, kinds, (size_t)ncols);
  a->next_offset = sqlite3_value_int64(argv[1]);
  sqlite3_int64 expected = sqlite3_value_int64(argv[2]);
  a->expected = expected > 0 && expected <= (1 << 26) ? expected : 0;
  sqlite3_int64 rows = a->expected ? a->expected : 1024;
  if (!reserve(&a->offset, 8 * rows) || !reserve(&a->ts, 8 * rows)) return -1;
  for (int c = 0; c < ncols; c++) {
    int32_t zero = 0;
    if (a->kinds[c] != 'b' && a->kinds[c] != 't') return 0;
    if (!reserve(&a->valid[c], (rows + 7) / 8) || !reserve(&a->offsets[c], 4 * (rows + 1))
        || !put(&a->offsets[c], &zero, 4))
      return -1;
  }
  return 1;
}

/* After the first row: room for the expected rows if they are alike. */
static int reserve_data(Acc *a, int c, sqlite3_int64 first_size) {
  if (!a->expected || !first_size) return 1;
  sqlite3_int64 want = first_size * a->expected;
  want += want / 8;
  return reserve(&a->data[c], want < MAX_DATA_RESERVE ? want : MAX_DATA_RESERVE);
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
  if (sqlite3_value_type(argv[3]) != SQLITE_INTEGER || sqlite3_value_type(argv[4]) != SQLITE_INTEGER
      || sqlite3_value_int64(argv[3]) != a->next_offset) {
    a->failed = 1;
    return;
  }
  sqlite3_int64 offset = a->next_offset++;
  sqlite3_int64 ts = sqlite3_value_int64(argv[4]);
  if (!put(&a->offset, &offset, 8) || !put(&a->ts, &ts, 8)) goto nomem;
  for (int c = 0; c < a->ncols; c++) {
    sqlite3_value *v = argv[FIXED_ARGS + c];
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
      if (!a->data[c].cap && !reserve_data(a, c, size)) goto nomem;
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

/* Appends `part` to `out` at 8-byte alignment (padding zeroed); its position. */
static sqlite3_int64 append(Buf *out, const Buf *part) {
  sqlite3_int64 at = out->len;
  if (part->len) memcpy(out->p + at, part->p, (size_t)part->len);
  memset(out->p + at + part->len, 0, (size_t)(padded(part->len) - part->len));
  out->len = at + padded(part->len);
  return at;
}

static void final(sqlite3_context *ctx) {
  Acc *a = sqlite3_aggregate_context(ctx, 0);
  if (!a || !a->started || a->failed) {
    sqlite3_result_null(ctx);
    if (a) release(a);
    return;
  }
  int ncols = a->ncols;
  int base = -1; /* the column whose data buffer becomes the result */
  for (int c = 0; c < ncols; c++)
    if (base < 0 || a->data[c].len > a->data[base].len) base = c;
  sqlite3_int64 trailer_words = 4 + 5 * ncols + 1;
  sqlite3_int64 total = padded(a->offset.len) + padded(a->ts.len) + 8 * trailer_words;
  for (int c = 0; c < ncols; c++)
    total += padded(a->valid[c].len) + padded(a->offsets[c].len) + padded(a->data[c].len);
  sqlite3_int64 data_len[MAX_COLS] = {0};
  for (int c = 0; c < ncols; c++) data_len[c] = a->data[c].len;
  Buf out = {0, 0, 0};
  if (base >= 0) {
    out = a->data[base];
    a->data[base] = (Buf){0, 0, 0};
  }
  if (!reserve(&out, total)) {
    sqlite3_free(out.p);
    release(a);
    sqlite3_result_error_nomem(ctx);
    return;
  }
  memset(out.p + out.len, 0, (size_t)(padded(out.len) - out.len));
  out.len = padded(out.len);
  sqlite3_int64 data_at[MAX_COLS] = {0}, valid_at[MAX_COLS], offsets_at[MAX_COLS];
  sqlite3_int64 offset_at = append(&out, &a->offset), ts_at = append(&out, &a->ts);
  for (int c = 0; c < ncols; c++) {
    valid_at[c] = append(&out, &a->valid[c]);
    offsets_at[c] = append(&out, &a->offsets[c]);
    if (c != base) data_at[c] = append(&out, &a->data[c]);
  }
  sqlite3_int64 *words = (sqlite3_int64 *)(out.p + out.len);
  int w = 0;
  words[w++] = a->n;
  words[w++] = ncols;
  words[w++] = offset_at;
  words[w++] = ts_at;
  for (int c = 0; c < ncols; c++) {
    words[w++] = a->nulls[c];
    words[w++] = data_len[c];
    words[w++] = valid_at[c];
    words[w++] = offsets_at[c];
    words[w++] = data_at[c];
  }
  words[w++] = trailer_words;
  release(a);
  /* SQLite frees the result with sqlite3_free, also when it is too big (SQLITE_TOOBIG). */
  sqlite3_result_blob64(ctx, out.p, (sqlite3_uint64)total, sqlite3_free);
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
