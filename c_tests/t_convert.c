/* Every type conversion pair: each numeric variable type is written with each of the 11 numeric
 * nc_put_vara_<t> memory types and read back with each nc_get_vara_<t>, before and after reopening.
 * The same program run against an HDF5 netCDF-4 file is the oracle, NC_ERANGE codes included.
 * Values netCDF leaves unspecified (elements out of range for the conversion, per nc_put_var1 /
 * nc_get_var1 of that element returning NC_ERANGE on the same target) print as "?". */
#include "harness.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define K 8

typedef struct {
    const char *name;
    size_t size;
    const void *values; /* K values */
    int (*put)(int, int, const size_t *, const size_t *, const void *);
    int (*get)(int, int, const size_t *, const size_t *, void *);
    int (*put1)(int, int, const size_t *, const void *);
    int (*get1)(int, int, const size_t *, void *);
    void (*fmt)(char *, size_t, const void *, size_t);
} memtype;

#define MEMTYPE(suffix, ctype, pfmt, pcast)                                                      \
    static int put_##suffix(int nc, int v, const size_t *s, const size_t *c, const void *p) {    \
        return nc_put_vara_##suffix(nc, v, s, c, (const ctype *)p);                              \
    }                                                                                            \
    static int get_##suffix(int nc, int v, const size_t *s, const size_t *c, void *p) {          \
        return nc_get_vara_##suffix(nc, v, s, c, (ctype *)p);                                    \
    }                                                                                            \
    static int put1_##suffix(int nc, int v, const size_t *i, const void *p) {                    \
        return nc_put_var1_##suffix(nc, v, i, (const ctype *)p);                                 \
    }                                                                                            \
    static int get1_##suffix(int nc, int v, const size_t *i, void *p) {                          \
        return nc_get_var1_##suffix(nc, v, i, (ctype *)p);                                       \
    }                                                                                            \
    static void fmt_##suffix(char *b, size_t n, const void *p, size_t i) {                       \
        snprintf(b, n, pfmt, (pcast)((const ctype *)p)[i]);                                      \
    }

MEMTYPE(schar, signed char, "%d", int)
MEMTYPE(uchar, unsigned char, "%u", unsigned)
MEMTYPE(short, short, "%d", int)
MEMTYPE(ushort, unsigned short, "%u", unsigned)
MEMTYPE(int, int, "%d", int)
MEMTYPE(uint, unsigned int, "%u", unsigned)
MEMTYPE(long, long, "%ld", long)
MEMTYPE(longlong, long long, "%lld", long long)
MEMTYPE(ulonglong, unsigned long long, "%llu", unsigned long long)
MEMTYPE(float, float, "%.9g", double)
MEMTYPE(double, double, "%.17g", double)

static const signed char v_schar[K] = {-128, -1, 0, 1, 127, -2, 100, 5};
static const unsigned char v_uchar[K] = {0, 1, 127, 128, 255, 200, 2, 3};
static const short v_short[K] = {-32768, -129, -1, 0, 1, 255, 256, 32767};
static const unsigned short v_ushort[K] = {0, 1, 127, 255, 256, 32767, 32768, 65535};
static const int v_int[K] = {INT_MIN, -32769, -1, 0, 1, 65535, 65536, INT_MAX};
static const unsigned v_uint[K] = {0, 1, 255, 65535, 65536, 2147483647u, 2147483648u, UINT_MAX};
static const long v_long[K] = {LONG_MIN, (long)INT_MIN - 1, -1, 0, 1, (long)UINT_MAX,
                               (long)UINT_MAX + 1, LONG_MAX};
static const long long v_longlong[K] = {LLONG_MIN, -129, -1, 0, 1, 65536, (long long)UINT_MAX + 1,
                                        LLONG_MAX};
static const unsigned long long v_ulonglong[K] = {0, 1, 255, UINT_MAX, (unsigned long long)UINT_MAX + 1,
                                                  LLONG_MAX, (unsigned long long)LLONG_MAX + 1,
                                                  ULLONG_MAX};
static float v_float[K];
static double v_double[K];

#define ENTRY(suffix, ctype) \
    {#suffix, sizeof(ctype), v_##suffix, put_##suffix, get_##suffix, put1_##suffix, get1_##suffix, fmt_##suffix}

static const memtype MEMTYPES[] = {
    ENTRY(schar, signed char),       ENTRY(uchar, unsigned char), ENTRY(short, short),
    ENTRY(ushort, unsigned short),   ENTRY(int, int),             ENTRY(uint, unsigned),
    ENTRY(long, long),               ENTRY(longlong, long long),  ENTRY(ulonglong, unsigned long long),
    ENTRY(float, float),             ENTRY(double, double),
};
#define NMEM (sizeof MEMTYPES / sizeof MEMTYPES[0])

static const nc_type VARTYPES[] = {NC_BYTE, NC_UBYTE, NC_SHORT,  NC_USHORT, NC_INT,
                                   NC_UINT, NC_INT64, NC_UINT64, NC_FLOAT,  NC_DOUBLE};
#define NVAR (sizeof VARTYPES / sizeof VARTYPES[0])

static unsigned char put_mask[NVAR][NMEM][K];

static void init_values(void) {
    const float f[K] = {-FLT_MAX, -1.5f, -0.0f, 0.5f, 1e10f, 3e38f, NAN, INFINITY};
    const double d[K] = {-DBL_MAX, -1e20, -0.0, 0.1, 255.5, 4294967295.0, 1e300, NAN};
    memcpy(v_float, f, sizeof f);
    memcpy(v_double, d, sizeof d);
}

static void read_all(trace *tr, int ncid, const char *phase) {
    unsigned char buf[K * 8], one[8];
    char line[4096], val[64];
    for (size_t vt = 0; vt < NVAR; vt++) {
        for (size_t pt = 0; pt < NMEM; pt++) {
            char name[64];
            int varid;
            snprintf(name, sizeof name, "v%d_%s", (int)VARTYPES[vt], MEMTYPES[pt].name);
            CHECK(nc_inq_varid(ncid, name, &varid));
            for (size_t gt = 0; gt < NMEM; gt++) {
                const memtype *g = &MEMTYPES[gt];
                size_t start = 0, count = K;
                memset(buf, 0, sizeof buf);
                int rc = g->get(ncid, varid, &start, &count, buf);
                int n = snprintf(line, sizeof line, "%s get %s as %s -> %d:", phase, name, g->name, rc);
                for (size_t i = 0; i < K; i++) {
                    int rc1 = g->get1(ncid, varid, &i, one);
                    if (rc1 != NC_NOERR && rc1 != NC_ERANGE) {
                        snprintf(val, sizeof val, " [var1 %d]", rc1);
                    } else if (put_mask[vt][pt][i] || rc1 == NC_ERANGE) {
                        snprintf(val, sizeof val, " ?%s", rc1 == NC_ERANGE ? "r" : "");
                    } else {
                        val[0] = ' ';
                        g->fmt(val + 1, sizeof val - 1, buf, i);
                    }
                    n += snprintf(line + n, sizeof line - (size_t)n, "%s", val);
                }
                trace_add(tr, "%s", line);
            }
        }
    }
}

static void scenario(const target *t, trace *tr) {
    int ncid, dim, varid;
    CHECK(nc_create(t->path, NC_NETCDF4 | NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "n", K, &dim));
    for (size_t vt = 0; vt < NVAR; vt++)
        for (size_t pt = 0; pt < NMEM; pt++) {
            char name[64];
            snprintf(name, sizeof name, "v%d_%s", (int)VARTYPES[vt], MEMTYPES[pt].name);
            CHECK(nc_def_var(ncid, name, VARTYPES[vt], 1, &dim, &varid));
        }
    CHECK(nc_enddef(ncid));
    for (size_t vt = 0; vt < NVAR; vt++)
        for (size_t pt = 0; pt < NMEM; pt++) {
            const memtype *p = &MEMTYPES[pt];
            size_t start = 0, count = K;
            char name[64], rcs[K * 4 + 1] = "";
            varid = (int)(vt * NMEM + pt);
            snprintf(name, sizeof name, "v%d_%s", (int)VARTYPES[vt], p->name);
            int rc = p->put(ncid, varid, &start, &count, p->values);
            for (size_t i = 0; i < K; i++) {
                int rc1 = p->put1(ncid, varid, &i, (const unsigned char *)p->values + i * p->size);
                put_mask[vt][pt][i] = rc1 != NC_NOERR;
                snprintf(rcs + strlen(rcs), sizeof rcs - strlen(rcs), " %d", rc1);
            }
            trace_add(tr, "put %s -> %d; per element:%s", name, rc, rcs);
        }
    read_all(tr, ncid, "open");
    CHECK(nc_close(ncid));
    CHECK(nc_open(t->path, NC_NOWRITE, &ncid));
    read_all(tr, ncid, "reopened");
    /* Text and numbers do not mix: NC_ECHAR both ways. */
    char text[K] = "abcdefg";
    size_t start = 0, count = K;
    trace_add(tr, "get_vara_text of a numeric variable -> %d", nc_get_vara_text(ncid, 0, &start, &count, text));
    CHECK(nc_close(ncid));
    CHECK(nc_open(t->path, NC_WRITE, &ncid));
    trace_add(tr, "put_vara_text into a numeric variable -> %d", nc_put_vara_text(ncid, 0, &start, &count, text));
    CHECK(nc_redef(ncid));
    CHECK(nc_def_var(ncid, "c", NC_CHAR, 1, &dim, &varid));
    CHECK(nc_enddef(ncid));
    trace_add(tr, "put_vara_int into a char variable -> %d", nc_put_vara_int(ncid, varid, &start, &count, v_int));
    trace_add(tr, "put_vara_text into a char variable -> %d", nc_put_vara_text(ncid, varid, &start, &count, text));
    int ints[K];
    trace_add(tr, "get_vara_int of a char variable -> %d", nc_get_vara_int(ncid, varid, &start, &count, ints));
    CHECK(nc_close(ncid));
}

/* The classic model's one conversion rule: byte <-> unsigned char never reports NC_ERANGE (values
 * are cast), for variables and attributes alike. */
static void classic_scenario(const target *t, trace *tr) {
    int ncid, dim, varid;
    const unsigned char u[4] = {0, 127, 200, 255};
    const signed char s[4] = {-128, -1, 0, 127};
    unsigned char got_u[4] = {0};
    signed char got_s[4] = {0};
    size_t start = 0, count = 4;
    CHECK(nc_create(t->path, NC_NETCDF4 | NC_CLASSIC_MODEL | NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "n", 4, &dim));
    CHECK(nc_def_var(ncid, "b", NC_BYTE, 1, &dim, &varid));
    trace_add(tr, "put_att_uchar on a byte attribute -> %d", nc_put_att_uchar(ncid, varid, "a", NC_BYTE, 4, u));
    CHECK(nc_enddef(ncid));
    trace_add(tr, "put_vara_uchar into byte -> %d", nc_put_vara_uchar(ncid, varid, &start, &count, u));
    trace_add(tr, "get_vara_schar -> %d: %d %d %d %d", nc_get_vara_schar(ncid, varid, &start, &count, got_s),
              got_s[0], got_s[1], got_s[2], got_s[3]);
    trace_add(tr, "put_vara_schar into byte -> %d", nc_put_vara_schar(ncid, varid, &start, &count, s));
    trace_add(tr, "get_vara_uchar -> %d: %u %u %u %u", nc_get_vara_uchar(ncid, varid, &start, &count, got_u),
              got_u[0], got_u[1], got_u[2], got_u[3]);
    memset(got_u, 0, sizeof got_u);
    trace_add(tr, "get_att_uchar -> %d: %u %u %u %u", nc_get_att_uchar(ncid, varid, "a", got_u), got_u[0],
              got_u[1], got_u[2], got_u[3]);
    CHECK(nc_close(ncid));
}

int main(int argc, char **argv) {
    const char *dir = test_dir(argc, argv);
    target h5, zr;
    trace a = {0}, b = {0};
    init_values();
    make_targets(dir, "convert", &h5, &zr);
    scenario(&h5, &a);
    scenario(&zr, &b);
    int bad = trace_compare("conversions", &a, &b);
    trace_free(&a);
    trace_free(&b);
    trace c = {0}, d = {0};
    make_targets(dir, "convert_classic", &h5, &zr);
    classic_scenario(&h5, &c);
    classic_scenario(&zr, &d);
    bad += trace_compare("classic-model conversions", &c, &d);
    trace_free(&c);
    trace_free(&d);
    return bad ? 1 : 0;
}
