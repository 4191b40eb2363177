/* Filters through the public netCDF API. The calls HDF5 netCDF-4 serves without plugins (deflate,
 * shuffle, fletcher32, quantize, their inquiries and error codes, and the stored values) are traced
 * on an HDF5 file and on a Zarr store and must agree. The filters HDF5 needs plugins for (bzip2,
 * zstd, blosc) are then checked on the Zarr store alone: defined, inquired (also through
 * nc_def_var_zstandard/blosc and their inquiries), written, read back. */
#include "harness.h"

#include <netcdf_filter.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 100

static void trace_filters(trace *tr, int ncid, int varid, const char *name) {
    size_t nf = 0;
    unsigned ids[8] = {0};
    int rc = nc_inq_var_filter_ids(ncid, varid, &nf, NULL);
    trace_add(tr, "%s filter_ids rc %d n %zu", name, rc, nf);
    if (rc || nf > 8) return;
    nc_inq_var_filter_ids(ncid, varid, &nf, ids);
    for (size_t i = 0; i < nf; i++) {
        size_t np = 0;
        unsigned params[16] = {0};
        rc = nc_inq_var_filter_info(ncid, varid, ids[i], &np, NULL);
        trace_add(tr, "%s filter %u rc %d", name, ids[i], rc);
        /* HDF5 reports the parameters its filters computed (shuffle's element size); only the
         * deflate level is a visible parameter in both. */
        if (ids[i] == H5Z_FILTER_DEFLATE && np <= 16) {
            nc_inq_var_filter_info(ncid, varid, ids[i], &np, params);
            trace_add(tr, "%s deflate params %zu: %u", name, np, params[0]);
        }
    }
    int shuffle = -1, deflate = -1, level = -1, fletcher = -1, mode = -1, nsd = -1;
    trace_add(tr, "%s inq_var_deflate rc %d", name, nc_inq_var_deflate(ncid, varid, &shuffle, &deflate, &level));
    trace_add(tr, "%s shuffle %d deflate %d level %d", name, shuffle, deflate, level);
    trace_add(tr, "%s inq_var_fletcher32 rc %d", name, nc_inq_var_fletcher32(ncid, varid, &fletcher));
    trace_add(tr, "%s fletcher32 %d", name, fletcher);
    trace_add(tr, "%s inq_var_quantize rc %d", name, nc_inq_var_quantize(ncid, varid, &mode, &nsd));
    trace_add(tr, "%s quantize %d %d", name, mode, nsd);
    trace_add(tr, "%s no bzip2: %d", name, nc_inq_var_filter_info(ncid, varid, H5Z_FILTER_BZIP2, NULL, NULL));
}

static void portable(const target *t, trace *tr) {
    int ncid, x, s, v[6];
    const size_t chunk = 10;
    static float data[N];
    static double ddata[N];
    for (int i = 0; i < N; i++) {
        data[i] = (float)(i * 1.37 - 20.5);
        ddata[i] = i * 3.14159265358979 / 7.0;
    }
    CHECK(nc_create(t->path, NC_NETCDF4 | NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "x", N, &x));
    CHECK(nc_def_var(ncid, "deflated", NC_FLOAT, 1, &x, &v[0]));
    CHECK(nc_def_var(ncid, "checked", NC_INT, 1, &x, &v[1]));
    CHECK(nc_def_var(ncid, "rounded", NC_FLOAT, 1, &x, &v[2]));
    CHECK(nc_def_var(ncid, "granular", NC_DOUBLE, 1, &x, &v[3]));
    CHECK(nc_def_var(ncid, "groomed", NC_FLOAT, 1, &x, &v[4]));
    CHECK(nc_def_var(ncid, "scalar", NC_DOUBLE, 0, NULL, &v[5]));
    CHECK(nc_def_var(ncid, "label", NC_STRING, 1, &x, &s));
    for (int i = 0; i < 5; i++) CHECK(nc_def_var_chunking(ncid, v[i], NC_CHUNKED, &chunk));
    trace_add(tr, "level 10: %d", nc_def_var_deflate(ncid, v[0], 1, 1, 10));
    trace_add(tr, "level -1: %d", nc_def_var_deflate(ncid, v[0], 1, 1, -1));
    trace_add(tr, "deflate 4 + shuffle: %d", nc_def_var_deflate(ncid, v[0], 1, 1, 4));
    trace_add(tr, "fletcher32: %d", nc_def_var_fletcher32(ncid, v[1], 1));
    trace_add(tr, "deflate 1: %d", nc_def_var_deflate(ncid, v[1], 0, 1, 1));
    trace_add(tr, "filter 1 via def_var_filter: %d",
              nc_def_var_filter(ncid, v[3], H5Z_FILTER_DEFLATE, 1, (unsigned[]){2}));
    trace_add(tr, "bitround 9: %d", nc_def_var_quantize(ncid, v[2], NC_QUANTIZE_BITROUND, 9));
    trace_add(tr, "granular 4: %d", nc_def_var_quantize(ncid, v[3], NC_QUANTIZE_GRANULARBR, 4));
    trace_add(tr, "bitgroom 3: %d", nc_def_var_quantize(ncid, v[4], NC_QUANTIZE_BITGROOM, 3));
    trace_add(tr, "bitgroom 8 on float: %d", nc_def_var_quantize(ncid, v[0], NC_QUANTIZE_BITGROOM, 8));
    trace_add(tr, "bitround 53 on double: %d", nc_def_var_quantize(ncid, v[3], NC_QUANTIZE_BITROUND, 53));
    trace_add(tr, "quantize int: %d", nc_def_var_quantize(ncid, v[1], NC_QUANTIZE_BITGROOM, 3));
    trace_add(tr, "quantize mode 9: %d", nc_def_var_quantize(ncid, v[2], 9, 3));
    trace_add(tr, "filter avail 1: %d", nc_inq_filter_avail(ncid, H5Z_FILTER_DEFLATE));
    trace_add(tr, "filter avail 2: %d", nc_inq_filter_avail(ncid, H5Z_FILTER_SHUFFLE));
    trace_add(tr, "filter avail 3: %d", nc_inq_filter_avail(ncid, H5Z_FILTER_FLETCHER32));
    CHECK(nc_enddef(ncid));
    trace_add(tr, "deflate after enddef: %d", nc_def_var_deflate(ncid, v[1], 0, 1, 5));
    CHECK(nc_put_var_float(ncid, v[0], data));
    CHECK(nc_put_var_int(ncid, v[1], (int[N]){1, -2, 3, 2147483647}));
    CHECK(nc_put_var_float(ncid, v[2], data));
    CHECK(nc_put_var_double(ncid, v[3], ddata));
    CHECK(nc_put_var_float(ncid, v[4], data));
    CHECK(nc_close(ncid));

    CHECK(nc_open(t->path, NC_NOWRITE, &ncid));
    const char *names[5] = {"deflated", "checked", "rounded", "granular", "groomed"};
    for (int i = 0; i < 5; i++) trace_filters(tr, ncid, v[i], names[i]);
    static float got[N];
    static double dgot[N];
    for (int i = 0; i < 5; i++) {
        if (i == 1) continue;
        char line[64 * N] = "", *p = line;
        if (i == 3) {
            CHECK(nc_get_var_double(ncid, v[i], dgot));
            for (int k = 0; k < N; k++) p += sprintf(p, " %a", dgot[k]);
        } else {
            CHECK(nc_get_var_float(ncid, v[i], got));
            for (int k = 0; k < N; k++) p += sprintf(p, " %a", (double)got[k]);
        }
        trace_add(tr, "%s values%s", names[i], line);
    }
    size_t alen = 0;
    char att[64] = "";
    trace_add(tr, "rounded att rc %d", nc_inq_attlen(ncid, v[2], "_QuantizeBitRoundNumberOfSignificantBits", &alen));
    int nsd = 0;
    nc_get_att_int(ncid, v[2], "_QuantizeBitRoundNumberOfSignificantBits", &nsd);
    trace_add(tr, "rounded att %zu %d %s", alen, nsd, att);
    CHECK(nc_close(ncid));
}

/* Filters the Debian HDF5 has no plugins for: Zarr only. Returns the number of failures. */
static int zarr_only(const target *t) {
    int ncid, x, v[4], bad = 0;
    int data[N], got[N];
    const size_t chunk = 25;
    for (int i = 0; i < N; i++) data[i] = (i / 4) * 1000 - i;
#define EXPECT_STATUS(call, want)                                                           \
    do {                                                                                    \
        int rc_ = (call);                                                                   \
        if (rc_ != (want)) {                                                                \
            fprintf(stderr, "%s:%d: %s -> %d, expected %d\n", __FILE__, __LINE__, #call, rc_, \
                    (want));                                                                \
            bad++;                                                                          \
        }                                                                                   \
    } while (0)
    CHECK(nc_create(t->path, NC_NETCDF4 | NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "x", N, &x));
    const char *names[4] = {"zstd", "bzip2", "blosc", "blosc_zstd"};
    for (int i = 0; i < 4; i++) {
        CHECK(nc_def_var(ncid, names[i], NC_INT, 1, &x, &v[i]));
        CHECK(nc_def_var_chunking(ncid, v[i], NC_CHUNKED, &chunk));
    }
    for (unsigned id = 1; id <= 3; id++) EXPECT_STATUS(nc_inq_filter_avail(ncid, id), NC_NOERR);
    EXPECT_STATUS(nc_inq_filter_avail(ncid, H5Z_FILTER_BZIP2), NC_NOERR);
    EXPECT_STATUS(nc_inq_filter_avail(ncid, H5Z_FILTER_ZSTD), NC_NOERR);
    EXPECT_STATUS(nc_inq_filter_avail(ncid, H5Z_FILTER_BLOSC), NC_NOERR);
    EXPECT_STATUS(nc_inq_filter_avail(ncid, H5Z_FILTER_SZIP), NC_ENOFILTER);
    EXPECT_STATUS(nc_inq_filter_avail(ncid, 32004), NC_ENOFILTER);
    /* libnetcdf's nc_def_var_zstandard and nc_def_var_blosc do nothing and succeed when it
     * was built without those libraries (Debian's is); the library's own, interposed, serve
     * its datasets as netCDF's do, with the same checks. */
    EXPECT_STATUS(nc_def_var_zstandard(ncid, v[0], 23), NC_EINVAL);
    EXPECT_STATUS(nc_def_var_zstandard(ncid, v[0], 5), NC_NOERR);
    EXPECT_STATUS(nc_def_var_filter(ncid, v[1], H5Z_FILTER_BZIP2, 1, (unsigned[]){9}), NC_NOERR);
    EXPECT_STATUS(nc_def_var_blosc(ncid, v[2], 1, 5, 0, 3), NC_EINVAL);
    EXPECT_STATUS(nc_def_var_blosc(ncid, v[2], 6, 5, 0, 1), NC_EINVAL);
    EXPECT_STATUS(nc_def_var_blosc(ncid, v[2], 1, 5, 0, 1), NC_NOERR);
    EXPECT_STATUS(nc_def_var_filter(ncid, v[3], H5Z_FILTER_BLOSC, 7, (unsigned[]){0, 0, 0, 0, 9, 2, 5}), NC_NOERR);
    EXPECT_STATUS(nc_def_var_filter(ncid, v[3], H5Z_FILTER_BZIP2, 1, (unsigned[]){10}), NC_EFILTER);
    EXPECT_STATUS(nc_def_var_filter(ncid, v[3], H5Z_FILTER_BLOSC, 7, (unsigned[]){0, 0, 0, 0, 5, 1, 3}), NC_EFILTER);
    EXPECT_STATUS(nc_def_var_filter(ncid, v[3], 32004, 0, NULL), NC_ENOFILTER);
    CHECK(nc_enddef(ncid));
    for (int i = 0; i < 4; i++) CHECK(nc_put_var_int(ncid, v[i], data));
    CHECK(nc_close(ncid));
    CHECK(nc_open(t->path, NC_NOWRITE, &ncid));
    size_t np = 0;
    unsigned params[8] = {0};
    int has = -1, level = -1;
    EXPECT_STATUS(nc_inq_var_zstandard(ncid, v[0], &has, &level), NC_NOERR);
    EXPECT_STATUS(nc_inq_var_filter_info(ncid, v[0], H5Z_FILTER_ZSTD, &np, params), NC_NOERR);
    if (has != 1 || level != 5 || np != 1 || params[0] != 5) {
        fprintf(stderr, "zstd: has %d level %d; %zu params, level %u\n", has, level, np, params[0]);
        bad++;
    }
    has = -1;
    EXPECT_STATUS(nc_inq_var_zstandard(ncid, v[1], &has, NULL), NC_NOERR);
    if (has != 0) {
        fprintf(stderr, "bzip2 variable: zstandard has %d\n", has);
        bad++;
    }
    unsigned compressor = 9, blevel = 0, blocksize = 9, shuffle = 9;
    has = -1;
    EXPECT_STATUS(nc_inq_var_blosc(ncid, v[2], &has, &compressor, &blevel, &blocksize, &shuffle), NC_NOERR);
    if (has != 1 || compressor != 1 || blevel != 5 || blocksize != 0 || shuffle != 1) {
        fprintf(stderr, "blosc: has %d compressor %u level %u blocksize %u shuffle %u\n", has,
                compressor, blevel, blocksize, shuffle);
        bad++;
    }
    has = -1;
    EXPECT_STATUS(nc_inq_var_blosc(ncid, v[0], &has, NULL, NULL, NULL, NULL), NC_NOERR);
    if (has != 0) {
        fprintf(stderr, "zstd variable: blosc has %d\n", has);
        bad++;
    }
    EXPECT_STATUS(nc_inq_var_zstandard(ncid, 99, &has, NULL), NC_ENOTVAR);
    EXPECT_STATUS(nc_inq_var_filter_info(ncid, v[1], H5Z_FILTER_BZIP2, &np, params), NC_NOERR);
    if (np != 1 || params[0] != 9) {
        fprintf(stderr, "bzip2 params %zu %u\n", np, params[0]);
        bad++;
    }
    EXPECT_STATUS(nc_inq_var_filter_info(ncid, v[3], H5Z_FILTER_BLOSC, &np, params), NC_NOERR);
    if (np != 7 || params[4] != 9 || params[5] != 2 || params[6] != 5) {
        fprintf(stderr, "blosc params %zu %u %u %u\n", np, params[4], params[5], params[6]);
        bad++;
    }
    /* One element per chunk with no chunk cache: coded chunks that can stop early (zstd, blosc)
     * are decoded only up to the element; every codec must give the same values. */
    for (int i = 0; i < 4; i++) {
        const size_t start = 3, count = N / chunk;
        const ptrdiff_t stride = (ptrdiff_t)chunk;
        int series[N / 25];
        CHECK(nc_set_var_chunk_cache(ncid, v[i], 0, 0, 0.75f));
        memset(series, 0, sizeof series);
        CHECK(nc_get_vars_int(ncid, v[i], &start, &count, &stride, series));
        for (size_t k = 0; k < count; k++)
            if (series[k] != data[start + k * chunk]) {
                fprintf(stderr, "%s: series[%zu] = %d, expected %d\n", names[i], k, series[k],
                        data[start + k * chunk]);
                bad++;
            }
    }
    for (int i = 0; i < 4; i++) {
        memset(got, 0, sizeof got);
        CHECK(nc_get_var_int(ncid, v[i], got));
        if (memcmp(got, data, sizeof data) != 0) {
            fprintf(stderr, "%s: values differ\n", names[i]);
            bad++;
        }
    }
    CHECK(nc_close(ncid));
    return bad;
}

/* A loop of nc_get_vara, one chunk at a time, over chunks of 4 MiB on a dataset opened
 * read-only, the way nccopy reads: zstd chunks are decoded ahead in the background (the edge
 * chunks, the part inside the variable, keep the sequence going), a blosc chunk's blocks are
 * decompressed in ranges on several threads, and an uncompressed chunk is read in parallel parts.
 * Every value read must be the value written. */
static int chunk_loop_reads_ahead(const target *t) {
    enum { T = 5, Y = 1024, X = 1400, CY = 1024, CX = 1024, CODINGS = 3 };
    const size_t chunks[3] = {1, CY, CX};
    const char *names[CODINGS] = {"zstd", "blosc_lz4", "none"};
    int ncid, dims[3], v[CODINGS], bad = 0;
    float *data = malloc(sizeof(float) * T * Y * X), *got = malloc(sizeof(float) * CY * CX);
    if (!data || !got) return 1;
    for (size_t i = 0; i < (size_t)T * Y * X; i++) data[i] = (float)(i % 9973) * 0.25f;
    CHECK(nc_create(t->path, NC_NETCDF4 | NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "t", T, &dims[0]));
    CHECK(nc_def_dim(ncid, "y", Y, &dims[1]));
    CHECK(nc_def_dim(ncid, "x", X, &dims[2]));
    for (int c = 0; c < CODINGS; c++) {
        CHECK(nc_def_var(ncid, names[c], NC_FLOAT, 3, dims, &v[c]));
        CHECK(nc_def_var_chunking(ncid, v[c], NC_CHUNKED, chunks));
    }
    CHECK(nc_def_var_filter(ncid, v[0], H5Z_FILTER_ZSTD, 1, (unsigned[]){3}));
    CHECK(nc_def_var_filter(ncid, v[1], H5Z_FILTER_BLOSC, 7, (unsigned[]){0, 0, 0, 0, 5, 1, 1}));
    for (int c = 0; c < CODINGS; c++) CHECK(nc_put_var_float(ncid, v[c], data));
    CHECK(nc_close(ncid));
    CHECK(nc_open(t->path, NC_NOWRITE, &ncid));
    for (int c = 0; c < CODINGS; c++)
        for (size_t ti = 0; ti < T; ti++)
            for (size_t x0 = 0; x0 < X; x0 += CX) {
                const size_t start[3] = {ti, 0, x0};
                const size_t count[3] = {1, CY, x0 + CX <= X ? CX : X - x0};
                CHECK(nc_get_vara_float(ncid, v[c], start, count, got));
                for (size_t y = 0; y < count[1]; y++)
                    for (size_t x = 0; x < count[2]; x++) {
                        float want = data[(ti * Y + y) * X + x0 + x];
                        float seen = got[y * count[2] + x];
                        if (seen != want && bad++ < 5)
                            fprintf(stderr, "chunk loop, %s: (%zu, %zu, %zu) = %.9g, expected %.9g\n",
                                    names[c], ti, y, x0 + x, seen, want);
                    }
            }
    CHECK(nc_close(ncid));
    free(data);
    free(got);
    return bad;
}

int main(int argc, char **argv) {
    const char *dir = test_dir(argc, argv);
    target h5, zr;
    trace a = {0}, b = {0};
    make_targets(dir, "filters", &h5, &zr);
    portable(&h5, &a);
    portable(&zr, &b);
    int bad = trace_compare("filters and quantize", &a, &b);
    trace_free(&a);
    trace_free(&b);
    make_targets(dir, "plugins", &h5, &zr);
    bad += zarr_only(&zr);
    make_targets(dir, "chunk_loop", &h5, &zr);
    bad += chunk_loop_reads_ahead(&zr);
    return bad ? 1 : 0;
}
