/* Variable-length types defined through the public netCDF API (nc_def_vlen, nc_inq_vlen) and
 * variables and attributes of them: bases of several sizes, a type of another group, one no
 * variable uses, a scalar, an unlimited dimension, a fill given with nc_def_var_fill and one given
 * as the _FillValue attribute, chunks never written, strided and mapped access, sequences built
 * with nc_put_vlen_element and read with nc_get_vlen_element, values freed with nc_free_vlens and
 * nc_reclaim_data, attributes of variable-length types on the dataset and on a variable (replaced,
 * renamed, deleted), and the error codes of what netCDF refuses (other types, text, byte orders,
 * names). Traced in the session, after a reopen and after adding a variable of a stored type, the
 * trace must equal the same program's on an HDF5 file. Where a Zarr store answers otherwise (or
 * an HDF5 file has no counterpart) the test has explicit expectations. */
#include "harness.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPECT_RC(call, want) expect_rc_(#call, (call), (want), #want)
static void expect_rc_(const char *what, int rc, int want, const char *wname) {
    if (rc != want) {
        fprintf(stderr, "%s -> %d (%s), expected %s\n", what, rc, nc_strerror(rc), wname);
        explicit_failures++;
    }
}

/* Appends `n` sequences at `v` ({len: bytes in hex}) to `line`; returns the new length. */
static int sequences(char *line, size_t cap, int at, const nc_vlen_t *v, size_t n,
                     size_t base_size) {
    for (size_t i = 0; i < n && at < (int)cap - 40; i++) {
        at += snprintf(line + at, cap - (size_t)at, " {%zu:", v[i].len);
        const unsigned char *p = v[i].p;
        for (size_t b = 0; b < v[i].len * base_size && at < (int)cap - 8; b++)
            at += snprintf(line + at, cap - (size_t)at, "%02X", p[b]);
        at += snprintf(line + at, cap - (size_t)at, "}");
    }
    return at;
}

/* The base size of a variable-length type, or 0. */
static size_t base_size_of(int ncid, nc_type type) {
    nc_type base;
    size_t size = 0;
    int class = 0;
    if (nc_inq_user_type(ncid, type, NULL, NULL, &base, NULL, &class) || class != NC_VLEN)
        return 0;
    CHECK(nc_inq_type(ncid, base, NULL, &size));
    return size;
}

static void trace_type(trace *tr, int ncid, nc_type id) {
    char name[NC_MAX_NAME + 1];
    size_t size, nfields;
    nc_type base;
    int class;
    int rc = nc_inq_user_type(ncid, id, name, &size, &base, &nfields, &class);
    if (rc != NC_NOERR) {
        trace_add(tr, "inq_user_type %d -> %d", id, rc);
        return;
    }
    trace_add(tr, "type '%s' class %d size %zu base %d fields %zu", name, class, size, base,
              nfields);
    if (class == NC_VLEN) {
        char vname[NC_MAX_NAME + 1];
        size_t vsize;
        nc_type vbase;
        CHECK(nc_inq_vlen(ncid, id, vname, &vsize, &vbase));
        if (strcmp(vname, name) || vsize != size || vbase != base)
            trace_add(tr, "  nc_inq_vlen differs");
    }
}

static void trace_atts(trace *tr, int ncid, int varid) {
    int natts;
    CHECK(nc_inq_varnatts(ncid, varid, &natts));
    for (int a = 0; a < natts; a++) {
        char name[NC_MAX_NAME + 1], tname[NC_MAX_NAME + 1];
        nc_type type;
        size_t len, size;
        CHECK(nc_inq_attname(ncid, varid, a, name));
        CHECK(nc_inq_att(ncid, varid, name, &type, &len));
        CHECK(nc_inq_type(ncid, type, tname, &size));
        char line[1024];
        int n = snprintf(line, sizeof line, "  att '%s' %s[%zu]", name, tname, len);
        size_t base = type > NC_STRING ? base_size_of(ncid, type) : 0;
        if (base && len <= 8) {
            nc_vlen_t values[8];
            int rc = nc_get_att(ncid, varid, name, values);
            n += snprintf(line + n, sizeof line - (size_t)n, " get -> %d:", rc);
            if (rc == NC_NOERR) {
                n = sequences(line, sizeof line, n, values, len, base);
                CHECK(nc_free_vlens(len, values));
            }
            int ints[64];
            char text[256];
            n += snprintf(line + n, sizeof line - (size_t)n, " (int %d, text %d)",
                          nc_get_att_int(ncid, varid, name, ints),
                          nc_get_att_text(ncid, varid, name, text));
        }
        trace_add(tr, "%s", line);
    }
}

static void trace_var(trace *tr, int ncid, int varid) {
    char name[NC_MAX_NAME + 1], tname[NC_MAX_NAME + 1];
    nc_type type;
    int ndims, dimids[NC_MAX_VAR_DIMS];
    size_t size;
    CHECK(nc_inq_var(ncid, varid, name, &type, &ndims, dimids, NULL));
    CHECK(nc_inq_type(ncid, type, tname, &size));
    size_t n = 1;
    for (int d = 0; d < ndims; d++) {
        size_t len;
        CHECK(nc_inq_dimlen(ncid, dimids[d], &len));
        n *= len;
    }
    trace_add(tr, "var '%s' of %s (%zu bytes), %zu values", name, tname, size, n);
    size_t base = base_size_of(ncid, type);
    if (!base) {
        trace_atts(tr, ncid, varid);
        return;
    }
    nc_vlen_t *values = calloc(n ? n : 1, sizeof(nc_vlen_t));
    int rc = nc_get_var(ncid, varid, values);
    char line[2048];
    int at = snprintf(line, sizeof line, "  get -> %d:", rc);
    if (rc == NC_NOERR) {
        sequences(line, sizeof line, at, values, n, base);
        /* Freed as ncdump frees them. */
        CHECK(nc_reclaim_data(ncid, type, values, n));
    }
    trace_add(tr, "%s", line);
    free(values);
    int no_fill = -1;
    nc_vlen_t fill = {12345, NULL};
    rc = nc_inq_var_fill(ncid, varid, &no_fill, &fill);
    at = snprintf(line, sizeof line, "  fill -> %d: nofill %d", rc, no_fill);
    if (rc == NC_NOERR && !no_fill) {
        sequences(line, sizeof line, at, &fill, 1, base);
        CHECK(nc_free_vlen(&fill));
    }
    trace_add(tr, "%s", line);
    int endian = -1;
    rc = nc_inq_var_endian(ncid, varid, &endian);
    trace_add(tr, "  endian -> %d: %d", rc, endian);
    if (n <= 8) {
        int ints[256];
        char text[256];
        trace_add(tr, "  get as int -> %d, text -> %d", nc_get_var_int(ncid, varid, ints),
                  nc_get_var_text(ncid, varid, text));
    }
    trace_atts(tr, ncid, varid);
}

/* Traces group `ncid`, and its subgroups when `deep`. */
static void trace_groups(trace *tr, int ncid, int deep) {
    char name[NC_MAX_NAME + 1];
    CHECK(nc_inq_grpname(ncid, name));
    trace_add(tr, "group '%s'", name);
    int ntypes, types[64];
    CHECK(nc_inq_typeids(ncid, &ntypes, types));
    for (int i = 0; i < ntypes; i++) trace_type(tr, ncid, types[i]);
    trace_atts(tr, ncid, NC_GLOBAL);
    int nvars, vars[64];
    CHECK(nc_inq_varids(ncid, &nvars, vars));
    for (int i = 0; i < nvars; i++) trace_var(tr, ncid, vars[i]);
    int ngrps, grps[16];
    CHECK(nc_inq_grps(ncid, &ngrps, grps));
    for (int i = 0; deep && i < ngrps; i++) trace_groups(tr, grps[i], deep);
}

static void trace_group(trace *tr, int ncid) { trace_groups(tr, ncid, 1); }

static void scenario(const target *t, trace *tr) {
    int ncid, g, n, rec, v_ints, v_bytes, v_one, v_grid, v_sparse, v_quiet, tmp;
    nc_type ints_t, bytes_t, doubles_t, spare_t, twin_t;

    /* The classic model has no user-defined types. */
    CHECK(nc_create(t->path, NC_NETCDF4 | NC_CLASSIC_MODEL | NC_CLOBBER, &ncid));
    TRACE_RC(tr, nc_def_vlen(ncid, "ints_t", NC_INT, &ints_t));
    CHECK(nc_close(ncid));

    CHECK(nc_create(t->path, NC_NETCDF4 | NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "n", 4, &n));
    CHECK(nc_def_dim(ncid, "rec", NC_UNLIMITED, &rec));
    CHECK(nc_def_grp(ncid, "g", &g));
    TRACE_RC(tr, nc_def_vlen(ncid, "ints_t", NC_INT, &ints_t));
    TRACE_RC(tr, nc_def_vlen(g, "bytes_t", NC_UBYTE, &bytes_t));
    TRACE_RC(tr, nc_def_vlen(ncid, "doubles_t", NC_DOUBLE, &doubles_t));
    TRACE_RC(tr, nc_def_vlen(g, "spare_t", NC_SHORT, &spare_t));
    TRACE_RC(tr, nc_def_vlen(ncid, "twin_t", NC_INT, &twin_t));

    /* Names in use or not names. */
    TRACE_RC(tr, nc_def_vlen(ncid, "ints_t", NC_INT, &tmp));
    TRACE_RC(tr, nc_def_vlen(ncid, "a/b", NC_INT, &tmp));
    TRACE_RC(tr, nc_def_vlen(ncid, "", NC_INT, &tmp));
    TRACE_RC(tr, nc_def_vlen(ncid, NULL, NC_INT, &tmp));
    /* A variable-length type holds no fields. */
    TRACE_RC(tr, nc_insert_compound(ncid, ints_t, "x", 0, NC_INT));

    TRACE_RC(tr, nc_def_var(ncid, "ints", ints_t, 1, &n, &v_ints));
    TRACE_RC(tr, nc_def_var(g, "bytes", bytes_t, 1, &n, &v_bytes));
    TRACE_RC(tr, nc_def_var(g, "one", ints_t, 0, NULL, &v_one));
    int grid_dims[2] = {rec, n};
    TRACE_RC(tr, nc_def_var(ncid, "grid", doubles_t, 2, grid_dims, &v_grid));
    TRACE_RC(tr, nc_def_var(ncid, "quiet", ints_t, 1, &n, &v_quiet));
    /* Two chunks, one never written: its values are the fill, after a reopen too. */
    size_t half = 2;
    TRACE_RC(tr, nc_def_var(g, "sparse", ints_t, 1, &n, &v_sparse));
    TRACE_RC(tr, nc_def_var_chunking(g, v_sparse, NC_CHUNKED, &half));
    int fill_ints[2] = {-7, 7};
    nc_vlen_t fill_one = {1, fill_ints};
    nc_vlen_t fill_two = {2, fill_ints};
    TRACE_RC(tr, nc_put_att(g, v_sparse, "_FillValue", ints_t, 1, &fill_one));
    TRACE_RC(tr, nc_def_var_endian(ncid, v_ints, NC_ENDIAN_BIG));
    TRACE_RC(tr, nc_def_var_endian(ncid, v_ints, NC_ENDIAN_LITTLE));

    /* Fills: given with nc_def_var_fill, given as the attribute, none (NC_NOFILL: see
     * zarr_only, netCDF-4 files fail to close then). */
    TRACE_RC(tr, nc_def_var_fill(ncid, v_ints, NC_FILL, &fill_two));
    TRACE_RC(tr, nc_put_att(g, v_one, "_FillValue", ints_t, 1, &fill_one));

    /* Attributes of variable-length types. */
    double ds[3] = {0.5, -1.25, 1e300};
    nc_vlen_t spans[3] = {{3, ds}, {0, NULL}, {1, ds + 2}};
    TRACE_RC(tr, nc_put_att(ncid, NC_GLOBAL, "spans", doubles_t, 3, spans));
    unsigned char bs[4] = {0, 1, 127, 255};
    nc_vlen_t packets[2] = {{4, bs}, {2, bs + 1}};
    TRACE_RC(tr, nc_put_att(g, NC_GLOBAL, "packets", bytes_t, 2, packets));
    TRACE_RC(tr, nc_put_att(ncid, v_ints, "bounds", ints_t, 1, &fill_two));
    TRACE_RC(tr, nc_put_att(ncid, NC_GLOBAL, "none", ints_t, 0, spans));
    /* Replaced by one of an atomic type, the attribute is of that type. */
    TRACE_RC(tr, nc_put_att(ncid, NC_GLOBAL, "replaced", ints_t, 1, &fill_one));
    TRACE_RC(tr, nc_put_att_text(ncid, NC_GLOBAL, "replaced", 3, "abc"));
    /* And the other way round. */
    TRACE_RC(tr, nc_put_att_text(ncid, NC_GLOBAL, "became", 3, "abc"));
    TRACE_RC(tr, nc_put_att(ncid, NC_GLOBAL, "became", ints_t, 1, &fill_two));
    /* Renamed and deleted. */
    TRACE_RC(tr, nc_put_att(ncid, NC_GLOBAL, "doomed", ints_t, 1, &fill_one));
    TRACE_RC(tr, nc_rename_att(ncid, v_ints, "bounds", "limits"));
    TRACE_RC(tr, nc_del_att(ncid, NC_GLOBAL, "doomed"));
    trace_group(tr, ncid);
    TRACE_RC(tr, nc_enddef(ncid));
    nc_type pairs[][2] = {{ints_t, twin_t}, {ints_t, doubles_t}, {ints_t, ints_t},
                          {ints_t, NC_INT}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        int equal = -1;
        int rc = nc_inq_type_equal(ncid, pairs[i][0], ncid, pairs[i][1], &equal);
        trace_add(tr, "pair %zu equal -> %d: %d", i, rc, equal);
    }

    int a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    nc_vlen_t four[4] = {{1, a}, {0, NULL}, {3, a + 1}, {4, a + 4}};
    TRACE_RC(tr, nc_put_var(ncid, v_ints, four));
    TRACE_RC(tr, nc_put_var_int(ncid, v_ints, a));
    TRACE_RC(tr, nc_put_var_text(ncid, v_ints, "abcd"));
    size_t start = 1, count = 2;
    nc_vlen_t two_packets[2];
    TRACE_RC(tr, nc_put_vlen_element(g, bytes_t, &two_packets[0], 3, bs));
    TRACE_RC(tr, nc_put_vlen_element(g, bytes_t, &two_packets[1], 1, bs + 3));
    TRACE_RC(tr, nc_put_vara(g, v_bytes, &start, &count, two_packets));
    unsigned char got[8] = {0};
    size_t got_len; /* not traced: netCDF-4 files answer 0 */
    TRACE_RC(tr, nc_get_vlen_element(g, bytes_t, &two_packets[0], &got_len, got));
    trace_add(tr, "vlen element: %02X%02X%02X", got[0], got[1], got[2]);
    nc_vlen_t single = {2, a + 6};
    TRACE_RC(tr, nc_put_var(g, v_one, &single));
    size_t first = 0;
    TRACE_RC(tr, nc_put_vara(g, v_sparse, &first, &count, four));
    /* Strided and mapped: every other column of two records, written transposed. */
    double d[6] = {1.5, 2.5, 3.5, 4.5, 5.5, 6.5};
    nc_vlen_t cells[4] = {{1, d}, {2, d + 1}, {0, NULL}, {3, d + 3}};
    size_t gstart[2] = {0, 0}, gcount[2] = {2, 2};
    ptrdiff_t gstride[2] = {1, 2}, gmap[2] = {1, 2};
    TRACE_RC(tr, nc_put_vars(ncid, v_grid, gstart, gcount, gstride, cells));
    /* Mapped access is for atomic types only. */
    gstart[1] = 1;
    TRACE_RC(tr, nc_put_varm(ncid, v_grid, gstart, gcount, gstride, gmap, cells));
    TRACE_RC(tr, nc_get_varm(ncid, v_grid, gstart, gcount, gstride, gmap, cells));
    /* A part read in the variable's own type, strided. */
    nc_vlen_t back[2];
    ptrdiff_t two = 2;
    TRACE_RC(tr, nc_get_vars(ncid, v_ints, &first, &count, &two, back));
    char line[512];
    int at = snprintf(line, sizeof line, "part of ints:");
    sequences(line, sizeof line, at, back, 2, sizeof(int));
    trace_add(tr, "%s", line);
    CHECK(nc_free_vlens(2, back));
    trace_add(tr, "-- in session");
    trace_group(tr, ncid);
    CHECK(nc_close(ncid));

    CHECK(nc_open(t->path, NC_WRITE, &ncid));
    trace_add(tr, "-- reopened");
    trace_group(tr, ncid);
    CHECK(nc_inq_typeid(ncid, "ints_t", &ints_t));
    TRACE_RC(tr, nc_redef(ncid));
    int v_more;
    TRACE_RC(tr, nc_def_var(ncid, "more", ints_t, 1, &n, &v_more));
    TRACE_RC(tr, nc_put_att(ncid, v_more, "_FillValue", ints_t, 1, &fill_two));
    TRACE_RC(tr, nc_put_att(ncid, NC_GLOBAL, "later", ints_t, 1, &fill_one));
    TRACE_RC(tr, nc_def_vlen(ncid, "late_t", NC_UINT64, &tmp));
    TRACE_RC(tr, nc_enddef(ncid));
    start = 3;
    count = 1;
    TRACE_RC(tr, nc_put_vara(ncid, v_more, &start, &count, &single));
    CHECK(nc_close(ncid));

    CHECK(nc_open(t->path, NC_NOWRITE, &ncid));
    trace_add(tr, "-- after adding a variable of a stored type");
    /* The root group only: netCDF-4 files fail to read the subgroup's variable with a fill
     * now (NC_EHDFERR). */
    trace_groups(tr, ncid, 0);
    CHECK(nc_close(ncid));
}

/* What a Zarr store answers where an HDF5 file answers otherwise or has no counterpart. */
static int zarr_only(const target *zr) {
    int ncid, n, v, tmp;
    nc_type ints_t;
    CHECK(nc_create(zr->path, NC_NETCDF4 | NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "n", 2, &n));
    /* Sequences of text or strings, or of user-defined types, are not served (netCDF-4 files
     * take them, and a base that is no type at all until the definitions end). */
    EXPECT_RC(nc_def_vlen(ncid, "strings_t", NC_STRING, &tmp), NC_EBADTYPE);
    EXPECT_RC(nc_def_vlen(ncid, "text_t", NC_CHAR, &tmp), NC_EBADTYPE);
    EXPECT_RC(nc_def_vlen(ncid, "nothing_t", NC_NAT, &tmp), NC_EBADTYPE);
    EXPECT_RC(nc_def_vlen(ncid, "unknown_t", 99, &tmp), NC_EBADTYPE);
    CHECK(nc_def_vlen(ncid, "ints_t", NC_INT, &ints_t));
    EXPECT_RC(nc_def_vlen(ncid, "nested_t", ints_t, &tmp), NC_EBADTYPE);
    /* Fields of a variable-length type are not served. */
    nc_type rec_t;
    CHECK(nc_def_compound(ncid, 24, "rec_t", &rec_t));
    EXPECT_RC(nc_insert_compound(ncid, rec_t, "seq", 8, ints_t), NC_EBADTYPE);
    CHECK(nc_insert_compound(ncid, rec_t, "x", 0, NC_INT));
    CHECK(nc_def_var(ncid, "v", ints_t, 1, &n, &v));
    /* A fill is one value of the variable's own type. */
    int xs[3] = {1, 2, 3};
    nc_vlen_t two[2] = {{1, xs}, {2, xs + 1}};
    EXPECT_RC(nc_put_att(ncid, v, "_FillValue", ints_t, 2, two), NC_EINVAL);
    int attid;
    /* Nor is a sequence of another type (netCDF-4 files answer NC_EBADTYPE and list an
     * empty attribute). */
    nc_type other_t;
    int v_other;
    CHECK(nc_def_vlen(ncid, "other_t", NC_DOUBLE, &other_t));
    CHECK(nc_def_var(ncid, "other", other_t, 1, &n, &v_other));
    EXPECT_RC(nc_put_att(ncid, v_other, "_FillValue", ints_t, 1, two), NC_EBADTYPE);
    EXPECT_RC(nc_inq_attid(ncid, v_other, "_FillValue", &attid), NC_ENOTATT);
    /* Nor is a number a fill of sequences (netCDF-4 files answer NC_EBADTYPE and list an
     * empty attribute). */
    EXPECT_RC(nc_put_att_int(ncid, v, "_FillValue", NC_INT, 1, xs), NC_EBADTYPE);
    EXPECT_RC(nc_inq_attid(ncid, v, "_FillValue", &attid), NC_ENOTATT);
    /* In NC_NOFILL mode (netCDF-4 files fail to close then), chunks never written read as
     * empty sequences. */
    int v_quiet;
    CHECK(nc_def_var(ncid, "quiet", ints_t, 1, &n, &v_quiet));
    CHECK(nc_def_var_fill(ncid, v_quiet, NC_NOFILL, NULL));
    /* A count with no values behind it is refused, before anything is stored. */
    nc_vlen_t broken = {3, NULL};
    EXPECT_RC(nc_put_att(ncid, NC_GLOBAL, "broken", ints_t, 1, &broken), NC_EINVAL);
    /* Renamed to _FillValue: an attribute of another type is refused; one of the variable's
     * own type becomes its fill, whole however long. */
    int v_renamed;
    CHECK(nc_def_var(ncid, "renamed", ints_t, 1, &n, &v_renamed));
    CHECK(nc_put_att_int(ncid, v_renamed, "not_fill", NC_INT, 1, xs));
    EXPECT_RC(nc_rename_att(ncid, v_renamed, "not_fill", "_FillValue"), NC_EBADTYPE);
    int hundred[100];
    for (int i = 0; i < 100; i++) hundred[i] = -i;
    nc_vlen_t long_fill = {100, hundred};
    CHECK(nc_put_att(ncid, v_renamed, "future", ints_t, 1, &long_fill));
    EXPECT_RC(nc_rename_att(ncid, v_renamed, "future", "_FillValue"), NC_NOERR);
    /* A fill whose attribute is deleted stays the fill, after a reopen too (as numbers'). */
    int v_kept;
    int nine = 9;
    nc_vlen_t fill_nine = {1, &nine};
    CHECK(nc_def_var(ncid, "kept", ints_t, 1, &n, &v_kept));
    CHECK(nc_put_att(ncid, v_kept, "_FillValue", ints_t, 1, &fill_nine));
    /* Renamed onto it, another attribute is refused and changes nothing; a fill is one
     * sequence. */
    CHECK(nc_put_att(ncid, v_kept, "other_fill", ints_t, 1, &long_fill));
    EXPECT_RC(nc_rename_att(ncid, v_kept, "other_fill", "_FillValue"), NC_ENAMEINUSE);
    CHECK(nc_put_att(ncid, v_kept, "two_fills", ints_t, 2, two));
    CHECK(nc_del_att(ncid, v_kept, "_FillValue"));
    EXPECT_RC(nc_rename_att(ncid, v_kept, "two_fills", "_FillValue"), NC_EINVAL);
    /* NC_NOFILL ignores the fill given: its pointer is not followed. */
    int v_nofill;
    nc_vlen_t wild = {5, (void *)16};
    CHECK(nc_def_var(ncid, "nofill", ints_t, 1, &n, &v_nofill));
    EXPECT_RC(nc_def_var_fill(ncid, v_nofill, NC_NOFILL, &wild), NC_NOERR);
    /* No values at all may come from nowhere. */
    EXPECT_RC(nc_put_att(ncid, NC_GLOBAL, "nothing", ints_t, 0, NULL), NC_NOERR);
    /* Compressed after their object codec (netCDF-4 files refuse filters on them); shuffle
     * has no use there and is left out. As for strings, no filter is reported (so that nccopy
     * into a netCDF-4 file, which would refuse it, copies them); _Codecs lists the codecs. */
    EXPECT_RC(nc_def_var_deflate(ncid, v, 1, 1, 1), NC_NOERR);
    EXPECT_RC(nc_inq_attid(ncid, NC_GLOBAL, "broken", &attid), NC_ENOTATT);
    CHECK(nc_enddef(ncid));
    nc_vlen_t half_broken[2] = {{1, xs}, {3, NULL}};
    EXPECT_RC(nc_put_var(ncid, v, half_broken), NC_EINVAL);
    /* nc_get_vlen_element gives the count (netCDF-4 files answer 0 here). */
    nc_vlen_t element;
    size_t count = 0;
    int got[3] = {0};
    CHECK(nc_put_vlen_element(ncid, ints_t, &element, 3, xs));
    CHECK(nc_get_vlen_element(ncid, ints_t, &element, &count, got));
    EXPECT(count == 3 && got[2] == 3 && element.p == xs);
    EXPECT_RC(nc_put_vlen_element(ncid, NC_INT, &element, 3, xs), NC_EBADTYPE);
    /* Long sequences widen the slots they are held in. */
    int many[1000];
    for (int i = 0; i < 1000; i++) many[i] = i * 3;
    nc_vlen_t long_ones[2] = {{1000, many}, {0, NULL}};
    CHECK(nc_put_var(ncid, v, long_ones));
    size_t kept_start = 0, kept_count = 1;
    CHECK(nc_put_vara(ncid, v_kept, &kept_start, &kept_count, &two[1]));
    CHECK(nc_close(ncid));
    CHECK(nc_open(zr->path, NC_NOWRITE, &ncid));
    nc_vlen_t back[2];
    CHECK(nc_get_var(ncid, v, back));
    EXPECT(back[0].len == 1000 && back[1].len == 0 && back[1].p == NULL);
    EXPECT(back[0].len == 1000 && memcmp(back[0].p, many, sizeof many) == 0);
    CHECK(nc_free_vlens(2, back));
    int shuffle = -1, deflate = -1, level = -1;
    CHECK(nc_inq_var_deflate(ncid, v, &shuffle, &deflate, &level));
    EXPECT(shuffle == 0 && deflate == 0);
    char codecs[512] = "";
    size_t codecs_len = 0;
    CHECK(nc_inq_attlen(ncid, v, "_Codecs", &codecs_len));
    if (codecs_len < sizeof codecs) CHECK(nc_get_att_text(ncid, v, "_Codecs", codecs));
    EXPECT(strstr(codecs, "\"vlen-array\"") && strstr(codecs, "\"zlib\"") &&
           !strstr(codecs, "shuffle"));
    CHECK(nc_get_var(ncid, v_renamed, back));
    EXPECT(back[0].len == 100 && back[1].len == 100 &&
           memcmp(back[1].p, hundred, sizeof hundred) == 0);
    CHECK(nc_free_vlens(2, back));
    CHECK(nc_get_var(ncid, v_kept, back));
    EXPECT(back[0].len == 2 && back[1].len == 1 && *(int *)back[1].p == 9);
    CHECK(nc_free_vlens(2, back));
    EXPECT_RC(nc_inq_attid(ncid, v_kept, "_FillValue", &attid), NC_ENOTATT);
    nc_vlen_t kept_fill = {0, NULL};
    int kept_nofill = -1;
    CHECK(nc_inq_var_fill(ncid, v_kept, &kept_nofill, &kept_fill));
    EXPECT(kept_nofill == 0 && kept_fill.len == 1 && *(int *)kept_fill.p == 9);
    CHECK(nc_free_vlen(&kept_fill));
    EXPECT_RC(nc_inq_var_fill(ncid, v_nofill, &kept_nofill, NULL), NC_NOERR);
    EXPECT(kept_nofill == 1);
    size_t nothing = 99;
    CHECK(nc_inq_attlen(ncid, NC_GLOBAL, "nothing", &nothing));
    EXPECT(nothing == 0);
    EXPECT_RC(nc_get_att(ncid, NC_GLOBAL, "nothing", NULL), NC_NOERR);
    int no_fill = -1;
    CHECK(nc_inq_var_fill(ncid, v_quiet, &no_fill, NULL));
    EXPECT(no_fill == 1);
    back[0].len = 99;
    CHECK(nc_get_var(ncid, v_quiet, back));
    EXPECT(back[0].len == 0 && back[0].p == NULL && back[1].len == 0);
    CHECK(nc_close(ncid));

    /* Zarr v3 has no codec for them. */
    char v3[4200];
    snprintf(v3, sizeof v3, "%s", zr->path);
    char *file = strstr(v3, ",file");
    if (file) {
        memmove(file + 3, file, strlen(file) + 1);
        memcpy(file, ",v3", 3);
    }
    CHECK(nc_create(v3, NC_NETCDF4 | NC_CLOBBER, &ncid));
    EXPECT_RC(nc_def_vlen(ncid, "ints_t", NC_INT, &tmp), NC_ENCZARR);
    CHECK(nc_close(ncid));

    /* In pure Zarr a variable-length variable is an object array of numcodecs' vlen-array: it
     * reads back as values of a type named after it. */
    char pure[4200];
    snprintf(pure, sizeof pure, "%s", zr->path);
    char *mode = strstr(pure, "mode=nczarr");
    if (mode) memmove(mode + 5, mode + 7, strlen(mode + 7) + 1);
    CHECK(nc_create(pure, NC_NETCDF4 | NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "n", 2, &n));
    CHECK(nc_def_vlen(ncid, "ints_t", NC_INT, &ints_t));
    CHECK(nc_def_var(ncid, "v", ints_t, 1, &n, &v));
    /* A fill, whose type pure Zarr does not record, and no value written. */
    int w;
    CHECK(nc_def_var(ncid, "w", ints_t, 1, &n, &w));
    CHECK(nc_put_att(ncid, w, "_FillValue", ints_t, 1, &two[1]));
    CHECK(nc_put_var(ncid, v, two));
    CHECK(nc_close(ncid));
    CHECK(nc_open(pure, NC_NOWRITE, &ncid));
    nc_type w_type, fill_type;
    size_t fill_len = 0;
    CHECK(nc_inq_vartype(ncid, w, &w_type));
    CHECK(nc_inq_att(ncid, w, "_FillValue", &fill_type, &fill_len));
    EXPECT(fill_type == w_type && fill_len == 1);
    CHECK(nc_get_var(ncid, w, back));
    EXPECT(back[0].len == 2 && back[1].len == 2 && ((int *)back[1].p)[1] == 3);
    CHECK(nc_free_vlens(2, back));
    nc_type type;
    CHECK(nc_inq_vartype(ncid, v, &type));
    char name[NC_MAX_NAME + 1] = "";
    size_t size = 0;
    nc_type base = 0;
    CHECK(nc_inq_vlen(ncid, type, name, &size, &base));
    EXPECT(base == NC_INT && size == sizeof(nc_vlen_t) && strcmp(name, "v_t") == 0);
    CHECK(nc_get_var(ncid, v, back));
    EXPECT(back[0].len == 1 && back[1].len == 2 && ((int *)back[1].p)[1] == 3);
    CHECK(nc_reclaim_data(ncid, type, back, 2));
    CHECK(nc_close(ncid));
    return explicit_failures;
}

int main(int argc, char **argv) {
    const char *dir = test_dir(argc, argv);
    target h5, zr;
    trace a = {0}, b = {0};
    make_targets(dir, "vlen", &h5, &zr);
    scenario(&h5, &a);
    scenario(&zr, &b);
    int bad = trace_compare("variable-length types", &a, &b);
    make_targets(dir, "vlen_refusals", &h5, &zr);
    bad += zarr_only(&zr);
    trace_free(&a);
    trace_free(&b);
    return bad ? 1 : 0;
}
