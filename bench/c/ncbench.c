/* ncbench: one benchmark workload on the public netCDF API, timed from inside the process.
 *
 * The same binary runs against every netCDF implementation the benchmark compares (our library
 * preloaded, Debian's netcdf-c, netcdf-c 4.10.1), so the only difference between contenders is
 * the library that serves the calls. It prints one line, "elapsed <seconds> checksum <value>",
 * where the time covers the workload only (not process start, not filling write buffers) and the
 * checksum lets the harness check that every contender read the same values.
 *
 *   ncbench read_all     URL VAR           nc_get_var of the whole variable
 *   ncbench read_chunks  URL VAR           nc_get_vara once per chunk, chunk-aligned
 *   ncbench read_strided URL VAR           nc_get_vars, every 4th element in the 2 fastest dims
 *   ncbench read_series  URL VAR           nc_get_vara of the series at index 0 of the other dims
 *   ncbench write        URL VAR TYPE T Y X CT CY CX CODEC    create, nc_put_var, close
 *   ncbench open         URL               open, inquire every variable and attribute, close
 *   ncbench write_each   URL N             create N variables one at a time, each defined, given
 *                                          an attribute and written (define mode left each
 *                                          time, as netCDF4-python and xarray write), close
 *
 * TYPE is float or ushort; CODEC is none, zlib1 (deflate 1 + shuffle), zstd3, blosc-lz4
 * (blosc lz4 with byte shuffle). Exit status 3 means "this implementation cannot do that"
 * (for example a codec it does not have), with the netCDF message on stderr.
 */
#include <netcdf.h>
#include <netcdf_filter.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXRANK 8

static int unsupported(int status) {
    return status == NC_ENOTBUILT || status == NC_ENOFILTER || status == NC_EFILTER ||
           status == NC_ENOTNC4;
}

#define CHECK(call)                                                                        \
    do {                                                                                   \
        int s_ = (call);                                                                   \
        if (s_ != NC_NOERR) {                                                              \
            fprintf(stderr, "ncbench: %s: %s (%d)\n", #call, nc_strerror(s_), s_);         \
            exit(unsupported(s_) ? 3 : 1);                                                 \
        }                                                                                  \
    } while (0)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* An order-dependent checksum of a buffer, the same for every contender that read the same
 * bytes in the same order: the sum of sampled bytes weighted by their sample number, modulo
 * 2^64, xor the length (big buffers are sampled every 61st byte, so it stays cheap and numpy
 * can compute it too). */
static uint64_t checksum(const unsigned char *p, size_t n) {
    uint64_t h = 0, k = 1;
    size_t step = n > (1u << 20) ? 61 : 1;
    for (size_t i = 0; i < n; i += step, k++) h += (uint64_t)p[i] * k;
    return h ^ n;
}

typedef struct {
    int ncid, varid, rank;
    nc_type type;
    size_t esize;
    size_t shape[MAXRANK], chunks[MAXRANK];
} Var;

static Var open_var(const char *url, const char *name) {
    Var v;
    memset(&v, 0, sizeof v);
    CHECK(nc_open(url, NC_NOWRITE, &v.ncid));
    CHECK(nc_inq_varid(v.ncid, name, &v.varid));
    int dims[MAXRANK];
    CHECK(nc_inq_var(v.ncid, v.varid, NULL, &v.type, &v.rank, dims, NULL));
    if (v.rank < 2 || v.rank > MAXRANK) {
        fprintf(stderr, "ncbench: %s needs rank 2..%d\n", name, MAXRANK);
        exit(1);
    }
    CHECK(nc_inq_type(v.ncid, v.type, NULL, &v.esize));
    for (int d = 0; d < v.rank; d++) CHECK(nc_inq_dimlen(v.ncid, dims[d], &v.shape[d]));
    int storage;
    CHECK(nc_inq_var_chunking(v.ncid, v.varid, &storage, v.chunks));
    if (storage != NC_CHUNKED)
        for (int d = 0; d < v.rank; d++) v.chunks[d] = v.shape[d];
    return v;
}

static size_t elements(const size_t *count, int rank) {
    size_t n = 1;
    for (int d = 0; d < rank; d++) n *= count[d];
    return n;
}

static void *must_alloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "ncbench: out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

static int read_all(const char *url, const char *name) {
    Var v = open_var(url, name);
    size_t n = elements(v.shape, v.rank) * v.esize;
    unsigned char *buf = must_alloc(n);
    double t0 = now();
    CHECK(nc_get_var(v.ncid, v.varid, buf));
    double t1 = now();
    printf("elapsed %.6f checksum %016llx\n", t1 - t0, (unsigned long long)checksum(buf, n));
    CHECK(nc_close(v.ncid));
    free(buf);
    return 0;
}

static int read_chunks(const char *url, const char *name) {
    Var v = open_var(url, name);
    size_t cbytes = elements(v.chunks, v.rank) * v.esize;
    unsigned char *buf = must_alloc(cbytes);
    size_t start[MAXRANK] = {0}, count[MAXRANK];
    uint64_t h = 0;
    double spent = 0; /* time in nc_get_vara only, not in the checksum */
    for (;;) {
        for (int d = 0; d < v.rank; d++) {
            size_t left = v.shape[d] - start[d];
            count[d] = left < v.chunks[d] ? left : v.chunks[d];
        }
        double t0 = now();
        CHECK(nc_get_vara(v.ncid, v.varid, start, count, buf));
        spent += now() - t0;
        h = h * 31 + checksum(buf, elements(count, v.rank) * v.esize);
        int d = v.rank - 1;
        while (d >= 0) {
            start[d] += v.chunks[d];
            if (start[d] < v.shape[d]) break;
            start[d] = 0;
            d--;
        }
        if (d < 0) break;
    }
    printf("elapsed %.6f checksum %016llx\n", spent, (unsigned long long)h);
    CHECK(nc_close(v.ncid));
    free(buf);
    return 0;
}

static int read_strided(const char *url, const char *name) {
    Var v = open_var(url, name);
    size_t start[MAXRANK] = {0}, count[MAXRANK];
    ptrdiff_t stride[MAXRANK];
    for (int d = 0; d < v.rank; d++) {
        stride[d] = d >= v.rank - 2 ? 4 : 1;
        count[d] = (v.shape[d] + (size_t)stride[d] - 1) / (size_t)stride[d];
    }
    size_t n = elements(count, v.rank) * v.esize;
    unsigned char *buf = must_alloc(n);
    double t0 = now();
    CHECK(nc_get_vars(v.ncid, v.varid, start, count, stride, buf));
    double t1 = now();
    printf("elapsed %.6f checksum %016llx\n", t1 - t0, (unsigned long long)checksum(buf, n));
    CHECK(nc_close(v.ncid));
    free(buf);
    return 0;
}

static int read_series(const char *url, const char *name) {
    Var v = open_var(url, name);
    size_t start[MAXRANK] = {0}, count[MAXRANK];
    for (int d = 0; d < v.rank; d++) count[d] = d == 0 ? v.shape[0] : 1;
    size_t n = v.shape[0] * v.esize;
    unsigned char *buf = must_alloc(n);
    double t0 = now();
    CHECK(nc_get_vara(v.ncid, v.varid, start, count, buf));
    double t1 = now();
    printf("elapsed %.6f checksum %016llx\n", t1 - t0, (unsigned long long)checksum(buf, n));
    CHECK(nc_close(v.ncid));
    free(buf);
    return 0;
}

/* Deterministic, moderately compressible values: a smooth field plus low-order noise. */
static void fill_values(unsigned char *buf, nc_type type, size_t n, size_t row) {
    uint32_t r = 12345;
    for (size_t i = 0; i < n; i++) {
        r = r * 1103515245u + 12345u;
        size_t y = i / row, x = i % row;
        double smooth = (double)((x * 7 + y * 3) % 1000);
        if (type == NC_FLOAT) {
            float f = (float)(smooth * 0.01 + (double)((r >> 16) & 0xff) * 1e-4);
            memcpy(buf + i * 4, &f, 4);
        } else {
            unsigned short u = (unsigned short)(smooth * 40 + ((r >> 16) & 0x1f));
            memcpy(buf + i * 2, &u, 2);
        }
    }
}

static int def_codec(int ncid, int varid, nc_type type, const char *codec) {
    if (strcmp(codec, "none") == 0) return NC_NOERR;
    if (strcmp(codec, "zlib1") == 0) return nc_def_var_deflate(ncid, varid, 1, 1, 1);
    /* By HDF5 filter id: the nc_def_var_zstandard/nc_def_var_blosc wrappers of a libnetcdf built
     * without those libraries (Debian's 4.9.0) return success and define nothing. */
    if (strcmp(codec, "zstd3") == 0) {
        const unsigned level[1] = {3};
        return nc_def_var_filter(ncid, varid, 32015, 1, level);
    }
    if (strcmp(codec, "blosc-lz4") == 0) {
        /* blocksize 0 (automatic), level 5, byte shuffle, subcompressor 1 = lz4 */
        const unsigned params[7] = {0, 0, 0, 0, 5, 1, 1};
        (void)type;
        return nc_def_var_filter(ncid, varid, 32001, 7, params);
    }
    fprintf(stderr, "ncbench: unknown codec %s\n", codec);
    exit(2);
}

static int write_var(int argc, char **argv) {
    if (argc != 12) {
        fprintf(stderr, "ncbench: write URL VAR TYPE T Y X CT CY CX CODEC\n");
        return 2;
    }
    const char *url = argv[2], *name = argv[3], *tname = argv[4], *codec = argv[11];
    nc_type type = strcmp(tname, "float") == 0 ? NC_FLOAT : NC_USHORT;
    size_t esize = type == NC_FLOAT ? 4 : 2;
    size_t shape[3], chunks[3];
    for (int d = 0; d < 3; d++) {
        shape[d] = strtoull(argv[5 + d], NULL, 10);
        chunks[d] = strtoull(argv[8 + d], NULL, 10);
    }
    size_t n = elements(shape, 3);
    unsigned char *buf = must_alloc(n * esize);
    fill_values(buf, type, n, shape[2]);
    double t0 = now();
    int ncid, varid, dims[3];
    const char *dimnames[3] = {"time", "y", "x"};
    CHECK(nc_create(url, NC_NETCDF4 | NC_CLOBBER, &ncid));
    for (int d = 0; d < 3; d++) CHECK(nc_def_dim(ncid, dimnames[d], shape[d], &dims[d]));
    CHECK(nc_def_var(ncid, name, type, 3, dims, &varid));
    CHECK(nc_def_var_chunking(ncid, varid, NC_CHUNKED, chunks));
    CHECK(nc_def_var_fill(ncid, varid, NC_NOFILL, NULL));
    CHECK(def_codec(ncid, varid, type, codec));
    CHECK(nc_enddef(ncid));
    CHECK(nc_put_var(ncid, varid, buf));
    CHECK(nc_close(ncid));
    double t1 = now();
    printf("elapsed %.6f checksum %016llx\n", t1 - t0,
           (unsigned long long)checksum(buf, n * esize));
    free(buf);
    return 0;
}

/* N float variables of 10 values over one dimension, each defined, given a `units` attribute
 * and written before the next is defined: every write leaves define mode, so the metadata are
 * stored once per variable. */
static int write_each(const char *url, const char *count) {
    int n = atoi(count);
    if (n <= 0) {
        fprintf(stderr, "ncbench: write_each needs a positive count, not %s\n", count);
        return 2;
    }
    double t0 = now();
    int ncid, dim;
    uint64_t h = (uint64_t)n;
    CHECK(nc_create(url, NC_NETCDF4 | NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "x", 10, &dim));
    for (int i = 0; i < n; i++) {
        char name[32];
        float values[10];
        int varid;
        snprintf(name, sizeof name, "v%d", i);
        CHECK(nc_def_var(ncid, name, NC_FLOAT, 1, &dim, &varid));
        CHECK(nc_put_att_text(ncid, varid, "units", 1, "m"));
        for (int k = 0; k < 10; k++) values[k] = (float)(i + k);
        CHECK(nc_put_var_float(ncid, varid, values));
        h = h * 31 + checksum((const unsigned char *)values, sizeof values);
    }
    CHECK(nc_close(ncid));
    double t1 = now();
    printf("elapsed %.6f checksum %016llx\n", t1 - t0, (unsigned long long)h);
    return 0;
}

/* What `ncdump -h` does, without printing: every variable, dimension and attribute inquired. */
static int open_all(const char *url) {
    double t0 = now();
    int ncid, nvars, ndims, natts;
    CHECK(nc_open(url, NC_NOWRITE, &ncid));
    CHECK(nc_inq(ncid, &ndims, &nvars, &natts, NULL));
    uint64_t h = (uint64_t)nvars;
    for (int v = 0; v < nvars; v++) {
        char name[NC_MAX_NAME + 1];
        nc_type type;
        int rank, vatts, dimids[NC_MAX_VAR_DIMS];
        CHECK(nc_inq_var(ncid, v, name, &type, &rank, dimids, &vatts));
        for (int a = 0; a < vatts; a++) {
            char aname[NC_MAX_NAME + 1];
            size_t len;
            CHECK(nc_inq_attname(ncid, v, a, aname));
            CHECK(nc_inq_attlen(ncid, v, aname, &len));
            h = h * 31 + len;
        }
        h = h * 31 + (uint64_t)rank + (uint64_t)vatts;
    }
    CHECK(nc_close(ncid));
    double t1 = now();
    printf("elapsed %.6f checksum %016llx\n", t1 - t0, (unsigned long long)h);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: ncbench WORKLOAD URL [VAR ...]\n");
        return 2;
    }
    const char *w = argv[1];
    if (strcmp(w, "write") == 0) return write_var(argc, argv);
    if (strcmp(w, "open") == 0) return open_all(argv[2]);
    if (strcmp(w, "write_each") == 0) {
        if (argc != 4) {
            fprintf(stderr, "usage: ncbench write_each URL N\n");
            return 2;
        }
        return write_each(argv[2], argv[3]);
    }
    if (argc != 4) {
        fprintf(stderr, "usage: ncbench %s URL VAR\n", w);
        return 2;
    }
    if (strcmp(w, "read_all") == 0) return read_all(argv[2], argv[3]);
    if (strcmp(w, "read_chunks") == 0) return read_chunks(argv[2], argv[3]);
    if (strcmp(w, "read_strided") == 0) return read_strided(argv[2], argv[3]);
    if (strcmp(w, "read_series") == 0) return read_series(argv[2], argv[3]);
    fprintf(stderr, "ncbench: unknown workload %s\n", w);
    return 2;
}
