/* Compound types of numpy structured records, through the public netCDF API: a pure Zarr v2
 * store written here byte by byte (no writer of records is needed) holds an array of records
 * `[["a", "<i2"], ["in", [["x", "|u1"], ["y", "<f8"]]]]` in group /g and one of the same layout
 * at the root. Checks the type listing and inquiry calls (nc_inq_typeids, nc_inq_user_type,
 * nc_inq_compound_field, nc_inq_compound_fieldindex, nc_inq_typeid by name, full name and
 * from another group, nc_inq_type, nc_inq_type_equal), reads whole, strided and refused,
 * nc_inq_var_fill, a write refused (opened read-only), and nc_reclaim_data(_all) on the values
 * read. */
#include "harness.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define N 3

typedef struct {
    unsigned char x;
    double y;
} inner_t;

typedef struct {
    short a;
    inner_t in;
} rec_t;

static void write_file(const char *dir, const char *name, const void *bytes, size_t n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(bytes, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
}

static void write_text(const char *dir, const char *name, const char *text) {
    write_file(dir, name, text, strlen(text));
}

/* One array of N records, stored packed in little-endian order (11 bytes each). */
static void write_array(const char *dir, int base) {
    static const char *zarray =
        "{\"zarr_format\": 2, \"shape\": [3], \"chunks\": [3], \"order\": \"C\", "
        "\"dtype\": [[\"a\", \"<i2\"], [\"in\", [[\"x\", \"|u1\"], [\"y\", \"<f8\"]]]], "
        "\"fill_value\": null, \"compressor\": null, \"filters\": null}";
    unsigned char chunk[N * 11];
    mkdir(dir, 0777);
    write_text(dir, ".zarray", zarray);
    write_text(dir, ".zattrs", "{\"_ARRAY_DIMENSIONS\": [\"n\"]}");
    for (int i = 0; i < N; i++) {
        unsigned char *r = chunk + 11 * i;
        uint16_t a = (uint16_t)(base + i);
        double y = 1.5 * (base + i);
        uint64_t bits;
        memcpy(&bits, &y, 8);
        r[0] = (unsigned char)(a & 0xff);
        r[1] = (unsigned char)(a >> 8);
        r[2] = (unsigned char)(i + 1);
        for (int b = 0; b < 8; b++) r[3 + b] = (unsigned char)(bits >> (8 * b));
    }
    write_file(dir, "0", chunk, sizeof chunk);
}

int main(int argc, char **argv) {
    const char *dir = test_dir(argc, argv);
    char store[2048], path[4096], url[4200];
    snprintf(store, sizeof store, "%s/records.zarr", dir);
    remove_path(store);
    mkdir(store, 0777);
    write_text(store, ".zgroup", "{\"zarr_format\": 2}");
    snprintf(path, sizeof path, "%s/s", store);
    write_array(path, 10);
    snprintf(path, sizeof path, "%s/g", store);
    mkdir(path, 0777);
    write_text(path, ".zgroup", "{\"zarr_format\": 2}");
    snprintf(path, sizeof path, "%s/g/r", store);
    write_array(path, 100);
    snprintf(url, sizeof url, "file://%s#mode=zarr,file", store);

    int ncid, g, varid, ntypes, ids[4], xtype;
    CHECK(nc_open(url, NC_NOWRITE, &ncid));
    CHECK(nc_inq_grp_ncid(ncid, "g", &g));

    /* Each group lists its own types, the nested one first. */
    CHECK(nc_inq_typeids(ncid, &ntypes, ids));
    EXPECT(ntypes == 2);
    int s_in_t = ids[0], s_t = ids[1];
    CHECK(nc_inq_typeids(g, &ntypes, ids));
    EXPECT(ntypes == 2);
    int r_in_t = ids[0], r_t = ids[1];
    EXPECT(s_in_t >= NC_FIRSTUSERTYPEID && r_t > r_in_t && r_in_t > s_t);

    char name[NC_MAX_NAME + 1];
    size_t size, nfields;
    nc_type base;
    int class;
    CHECK(nc_inq_user_type(g, r_t, name, &size, &base, &nfields, &class));
    EXPECT(strcmp(name, "r_t") == 0);
    EXPECT(size == sizeof(rec_t) && base == NC_NAT && nfields == 2 && class == NC_COMPOUND);
    CHECK(nc_inq_type(ncid, r_in_t, name, &size));
    EXPECT(strcmp(name, "r_in_t") == 0 && size == sizeof(inner_t));

    size_t offset;
    int ftype, ndims, dimsizes[NC_MAX_VAR_DIMS];
    CHECK(nc_inq_compound_field(g, r_t, 1, name, &offset, &ftype, &ndims, dimsizes));
    EXPECT(strcmp(name, "in") == 0 && offset == offsetof(rec_t, in) && ftype == r_in_t &&
           ndims == 0);
    CHECK(nc_inq_compound_field(g, r_in_t, 1, name, &offset, &ftype, &ndims, dimsizes));
    EXPECT(strcmp(name, "y") == 0 && offset == offsetof(inner_t, y) && ftype == NC_DOUBLE);
    EXPECT(nc_inq_compound_field(g, r_t, 2, name, &offset, &ftype, &ndims, dimsizes) ==
           NC_EBADFIELD);
    int fieldid;
    CHECK(nc_inq_compound_fieldindex(g, r_t, "in", &fieldid));
    EXPECT(fieldid == 1);
    EXPECT(nc_inq_compound_fieldindex(g, r_t, "zz", &fieldid) == NC_EBADFIELD);
    EXPECT(nc_inq_user_type(ncid, 999, name, &size, &base, &nfields, &class) == NC_EBADTYPE);

    /* Names: in scope, by full name, from a group that cannot see it, a relative path. */
    int found;
    CHECK(nc_inq_typeid(g, "r_t", &found));
    EXPECT(found == r_t);
    CHECK(nc_inq_typeid(g, "s_t", &found));
    EXPECT(found == s_t);
    CHECK(nc_inq_typeid(ncid, "/g/r_t", &found));
    EXPECT(found == r_t);
    CHECK(nc_inq_typeid(ncid, "r_t", &found));
    EXPECT(found == r_t);
    EXPECT(nc_inq_typeid(ncid, "g/r_t", &found) == NC_EINVAL);
    EXPECT(nc_inq_typeid(ncid, "nope", &found) == NC_EBADTYPE);
    CHECK(nc_inq_typeid(ncid, "double", &found));
    EXPECT(found == NC_DOUBLE);

    /* Equal layouts are equal types, whatever their names. */
    int equal = -1;
    CHECK(nc_inq_type_equal(ncid, s_t, g, r_t, &equal));
    EXPECT(equal == 1);
    CHECK(nc_inq_type_equal(ncid, s_t, ncid, s_in_t, &equal));
    EXPECT(equal == 0);
    CHECK(nc_inq_type_equal(ncid, s_t, ncid, NC_INT, &equal));
    EXPECT(equal == 0);

    CHECK(nc_inq_varid(g, "r", &varid));
    CHECK(nc_inq_vartype(g, varid, &xtype));
    EXPECT(xtype == r_t);

    rec_t recs[N];
    memset(recs, 0xee, sizeof recs);
    CHECK(nc_get_var(g, varid, recs));
    for (int i = 0; i < N; i++) {
        EXPECT(recs[i].a == 100 + i);
        EXPECT(recs[i].in.x == i + 1);
        EXPECT(recs[i].in.y == 1.5 * (100 + i));
    }
    size_t start = 0, count = 2;
    ptrdiff_t stride = 2;
    rec_t two[2];
    CHECK(nc_get_vars(g, varid, &start, &count, &stride, two));
    EXPECT(two[0].a == 100 && two[1].a == 102 && two[1].in.y == 153.0);
    int ints[N];
    EXPECT(nc_get_var_int(g, varid, ints) == NC_EBADTYPE);
    EXPECT(nc_put_var(g, varid, recs) != NC_NOERR);

    int no_fill = -1;
    rec_t fill;
    memset(&fill, 0xee, sizeof fill);
    CHECK(nc_inq_var_fill(g, varid, &no_fill, &fill));
    /* zarr-python's fill of null is NC_NOFILL, which (as in netCDF-4) leaves the buffer alone. */
    rec_t untouched;
    memset(&untouched, 0xee, sizeof untouched);
    EXPECT(no_fill == 1 && memcmp(&fill, &untouched, sizeof fill) == 0);

    /* The values own nothing; `_all` frees the buffer itself (valgrind sees it). */
    CHECK(nc_reclaim_data(g, r_t, recs, N));
    rec_t *copy = malloc(sizeof recs);
    if (copy == NULL) return 1;
    memcpy(copy, recs, sizeof recs);
    CHECK(nc_reclaim_data_all(g, r_t, copy, N));
    CHECK(nc_close(ncid));

    if (explicit_failures) fprintf(stderr, "%d explicit_failures\n", explicit_failures);
    return explicit_failures != 0;
}
