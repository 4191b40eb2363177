/* Hyperslab access: 1000 random vara and vars reads (fixed seed) of a 3-D variable with uneven
 * chunks against a dense in-memory copy, then strided (nc_get_vars/nc_put_vars) and mapped
 * (nc_get_varm/nc_put_varm with transposing maps) access traced against the HDF5 oracle. */
#include "harness.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NI 13
#define NJ 17
#define NK 11

static int dense[NI][NJ][NK];

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t next_rand(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

static int create_cube(const target *t) {
    int ncid, dims[3], varid;
    const size_t chunks[3] = {4, 5, 3};
    CHECK(nc_create(t->path, NC_NETCDF4 | NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "i", NI, &dims[0]));
    CHECK(nc_def_dim(ncid, "j", NJ, &dims[1]));
    CHECK(nc_def_dim(ncid, "k", NK, &dims[2]));
    CHECK(nc_def_var(ncid, "cube", NC_INT, 3, dims, &varid));
    CHECK(nc_def_var_chunking(ncid, varid, NC_CHUNKED, chunks));
    CHECK(nc_enddef(ncid));
    /* Written in irregular slabs that straddle chunk boundaries. */
    for (size_t i0 = 0; i0 < NI; i0 += 3) {
        size_t start[3] = {i0, 0, 0}, count[3] = {i0 + 3 > NI ? NI - i0 : 3, NJ, NK};
        CHECK(nc_put_vara_int(ncid, varid, start, count, &dense[i0][0][0]));
    }
    CHECK(nc_close(ncid));
    CHECK(nc_open(t->path, NC_NOWRITE, &ncid));
    return ncid;
}

static int random_reads(const target *t) {
    int ncid = create_cube(t), bad = 0;
    static int buf[NI * NJ * NK];
    for (int r = 0; r < 1000; r++) {
        size_t start[3], count[3], dimlen[3] = {NI, NJ, NK};
        ptrdiff_t stride[3] = {1, 1, 1};
        int strided = r % 2;
        for (int d = 0; d < 3; d++) {
            start[d] = next_rand() % dimlen[d];
            if (strided) stride[d] = 1 + (ptrdiff_t)(next_rand() % 4);
            size_t max = (dimlen[d] - start[d] + (size_t)stride[d] - 1) / (size_t)stride[d];
            count[d] = 1 + next_rand() % max;
        }
        memset(buf, 0x7f, sizeof buf);
        int rc = strided ? nc_get_vars_int(ncid, 0, start, count, stride, buf)
                         : nc_get_vara_int(ncid, 0, start, count, buf);
        if (rc != NC_NOERR) {
            fprintf(stderr, "%s read %d: status %d (%s)\n", t->label, r, rc, nc_strerror(rc));
            bad++;
            continue;
        }
        size_t n = 0;
        for (size_t a = 0; a < count[0]; a++)
            for (size_t b = 0; b < count[1]; b++)
                for (size_t c = 0; c < count[2]; c++, n++) {
                    int want = dense[start[0] + a * (size_t)stride[0]][start[1] + b * (size_t)stride[1]]
                                    [start[2] + c * (size_t)stride[2]];
                    if (buf[n] != want) {
                        if (bad < 10)
                            fprintf(stderr,
                                    "%s read %d start {%zu,%zu,%zu} count {%zu,%zu,%zu} stride "
                                    "{%td,%td,%td}: element %zu is %d, expected %d\n",
                                    t->label, r, start[0], start[1], start[2], count[0], count[1],
                                    count[2], stride[0], stride[1], stride[2], n, buf[n], want);
                        bad++;
                        a = count[0];
                        b = count[1];
                        break;
                    }
                }
    }
    CHECK(nc_close(ncid));
    printf("%s: 1000 random hyperslab reads, %d wrong\n", t->label, bad);
    return bad;
}

static void trace_ints(trace *tr, const char *what, int rc, const int *v, size_t n) {
    char line[8192];
    int len = snprintf(line, sizeof line, "%s -> %d:", what, rc);
    for (size_t i = 0; i < n && len < (int)sizeof line - 16; i++)
        len += snprintf(line + len, sizeof line - (size_t)len, " %d", rc == NC_NOERR ? v[i] : 0);
    trace_add(tr, "%s", line);
}

static void strided_and_mapped(const target *t, trace *tr) {
    int ncid, dims[2], varid, buf[6 * 9];
    CHECK(nc_create(t->path, NC_NETCDF4 | NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "y", 6, &dims[0]));
    CHECK(nc_def_dim(ncid, "x", 9, &dims[1]));
    CHECK(nc_def_var(ncid, "m", NC_INT, 2, dims, &varid));
    const size_t chunks[2] = {4, 4};
    CHECK(nc_def_var_chunking(ncid, varid, NC_CHUNKED, chunks));
    CHECK(nc_enddef(ncid));
    int all[6 * 9];
    for (int i = 0; i < 54; i++) all[i] = 100 + i;
    size_t s0[2] = {0, 0}, c0[2] = {6, 9};
    CHECK(nc_put_vara_int(ncid, varid, s0, c0, all));

    /* Strided writes and reads. */
    const size_t s1[2] = {1, 2}, c1[2] = {3, 3};
    const ptrdiff_t st1[2] = {2, 3}, bad_stride[2] = {0, 1};
    const int w[9] = {-1, -2, -3, -4, -5, -6, -7, -8, -9};
    trace_add(tr, "put_vars -> %d", nc_put_vars_int(ncid, varid, s1, c1, st1, w));
    memset(buf, 0, sizeof buf);
    trace_ints(tr, "get_vars", nc_get_vars_int(ncid, varid, s1, c1, st1, buf), buf, 9);
    trace_ints(tr, "get_vara all", nc_get_vara_int(ncid, varid, s0, c0, buf), buf, 54);
    trace_add(tr, "get_vars stride 0 -> %d", nc_get_vars_int(ncid, varid, s1, c1, bad_stride, buf));
    const size_t c_over[2] = {4, 3};
    trace_add(tr, "get_vars past the edge -> %d", nc_get_vars_int(ncid, varid, s1, c_over, st1, buf));
    trace_ints(tr, "get_vars NULL stride", nc_get_vars_int(ncid, varid, s1, c1, NULL, buf), buf, 9);

    /* Mapped: read the 6x9 variable transposed into a 9x6 buffer, and a strided mapped read. */
    const ptrdiff_t transpose[2] = {1, 6};
    memset(buf, 0, sizeof buf);
    trace_ints(tr, "get_varm transposed", nc_get_varm_int(ncid, varid, s0, c0, NULL, transpose, buf), buf, 54);
    const ptrdiff_t transpose3[2] = {1, 3};
    memset(buf, 0, sizeof buf);
    trace_ints(tr, "get_varm strided transposed", nc_get_varm_int(ncid, varid, s1, c1, st1, transpose3, buf),
               buf, 9);
    /* Mapped write from a transposed buffer, then read back plainly. */
    int tw[54];
    for (int i = 0; i < 54; i++) tw[i] = 1000 + i;
    trace_add(tr, "put_varm transposed -> %d", nc_put_varm_int(ncid, varid, s0, c0, NULL, transpose, tw));
    trace_ints(tr, "get_vara after put_varm", nc_get_vara_int(ncid, varid, s0, c0, buf), buf, 54);
    /* Mapped read into a wider buffer (gaps between elements). */
    int wide[6 * 9 * 2];
    memset(wide, 0, sizeof wide);
    const ptrdiff_t gaps[2] = {18, 2};
    trace_ints(tr, "get_varm with gaps", nc_get_varm_int(ncid, varid, s0, c0, NULL, gaps, wide), wide, 108);
    CHECK(nc_close(ncid));
    CHECK(nc_open(t->path, NC_NOWRITE, &ncid));
    trace_ints(tr, "get_vara after reopen", nc_get_vara_int(ncid, varid, s0, c0, buf), buf, 54);
    trace_ints(tr, "get_varm transposed after reopen",
               nc_get_varm_int(ncid, varid, s0, c0, NULL, transpose, buf), buf, 54);
    CHECK(nc_close(ncid));
}

/* A strided read of 1 MiB uncompressed chunks whose row spans outgrow one scratch batch (18
 * chunks, every 2nd row and 4th column: ~9.4 MiB of spans): the library reads only the spans,
 * reusing its scratch buffer; chunks never written (first, middle, last) read as fill. */
#define RT 18
#define RY 512
#define RX 512
static int row_span_reads(const target *t) {
    int ncid, dims[3], varid, bad = 0;
    CHECK(nc_create(t->path, NC_NETCDF4 | NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "t", RT, &dims[0]));
    CHECK(nc_def_dim(ncid, "y", RY, &dims[1]));
    CHECK(nc_def_dim(ncid, "x", RX, &dims[2]));
    CHECK(nc_def_var(ncid, "r", NC_INT, 3, dims, &varid));
    const size_t chunks[3] = {1, RY, RX};
    CHECK(nc_def_var_chunking(ncid, varid, NC_CHUNKED, chunks));
    CHECK(nc_enddef(ncid));
    int *plane = malloc(sizeof(int) * RY * RX);
    int *got = malloc(sizeof(int) * RT * (RY / 2) * (RX / 4));
    if (!plane || !got) return 1;
    for (size_t i = 0; i < RT; i++) {
        if (i == 0 || i == RT / 2 || i == RT - 1) continue;
        for (size_t n = 0; n < RY * RX; n++) plane[n] = (int)(i * 1000003 + n);
        size_t start[3] = {i, 0, 0}, count[3] = {1, RY, RX};
        CHECK(nc_put_vara_int(ncid, varid, start, count, plane));
    }
    CHECK(nc_close(ncid));
    CHECK(nc_open(t->path, NC_NOWRITE, &ncid));
    const size_t start[3] = {0, 0, 0}, count[3] = {RT, RY / 2, RX / 4};
    const ptrdiff_t stride[3] = {1, 2, 4};
    memset(got, 0x7f, sizeof(int) * RT * (RY / 2) * (RX / 4));
    CHECK(nc_get_vars_int(ncid, varid, start, count, stride, got));
    size_t n = 0;
    for (size_t i = 0; i < RT; i++)
        for (size_t y = 0; y < RY / 2; y++)
            for (size_t x = 0; x < RX / 4; x++, n++) {
                int unwritten = i == 0 || i == RT / 2 || i == RT - 1;
                int want = unwritten ? NC_FILL_INT : (int)(i * 1000003 + (2 * y) * RX + 4 * x);
                if (got[n] != want && bad++ < 10)
                    fprintf(stderr, "%s row spans: [%zu][%zu][%zu] is %d, expected %d\n", t->label, i,
                            2 * y, 4 * x, got[n], want);
            }
    CHECK(nc_close(ncid));
    free(plane);
    free(got);
    printf("%s: strided read of %d chunks by row spans, %d wrong\n", t->label, RT, bad);
    return bad;
}

int main(int argc, char **argv) {
    const char *dir = test_dir(argc, argv);
    target h5, zr;
    trace a = {0}, b = {0};
    for (int i = 0; i < NI; i++)
        for (int j = 0; j < NJ; j++)
            for (int k = 0; k < NK; k++) dense[i][j][k] = i * 10000 + j * 100 + k;
    make_targets(dir, "cube", &h5, &zr);
    int bad = random_reads(&h5);
    rng_state = 0x9E3779B97F4A7C15ull;
    bad += random_reads(&zr);
    make_targets(dir, "mapped", &h5, &zr);
    strided_and_mapped(&h5, &a);
    strided_and_mapped(&zr, &b);
    bad += trace_compare("strided and mapped access", &a, &b);
    make_targets(dir, "rows", &h5, &zr);
    bad += row_span_reads(&zr);
    trace_free(&a);
    trace_free(&b);
    return bad ? 1 : 0;
}
