/* Enum types defined through the public netCDF API (nc_def_enum, nc_insert_enum) and variables
 * and attributes of them: bases of every width and sign (values at their range's ends), a type of
 * another group, a scalar, a fill given with nc_def_var_fill and one given as the _FillValue
 * attribute, members inserted after a variable uses the type, attributes of an enum type on the
 * dataset and on a variable. The types, members, values written, fills, attributes and the error
 * codes of what netCDF refuses are traced in the session, after a reopen and after adding a
 * variable of a stored type, and must equal the same program's trace on an HDF5 file. Refusals
 * the HDF5 format makes only when the definitions end (or not at all) have explicit
 * expectations. */
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

/* One value of integer type `base` at `p`, as a long long (an unsigned 64-bit one by its bits). */
static long long value_at(nc_type base, const void *p) {
    switch (base) {
    case NC_BYTE: return *(const signed char *)p;
    case NC_UBYTE: return *(const unsigned char *)p;
    case NC_SHORT: return *(const short *)p;
    case NC_USHORT: return *(const unsigned short *)p;
    case NC_INT: return *(const int *)p;
    case NC_UINT: return *(const unsigned int *)p;
    case NC_INT64: return *(const long long *)p;
    case NC_UINT64: return (long long)*(const unsigned long long *)p;
    default: return -999999;
    }
}

static void trace_type(trace *tr, int ncid, nc_type id) {
    char name[NC_MAX_NAME + 1], tname[NC_MAX_NAME + 1];
    size_t size, nmembers;
    nc_type base;
    int class;
    int rc = nc_inq_user_type(ncid, id, name, &size, &base, &nmembers, &class);
    if (rc != NC_NOERR) {
        trace_add(tr, "inq_user_type %d -> %d", id, rc);
        return;
    }
    CHECK(nc_inq_type(ncid, base, tname, NULL));
    trace_add(tr, "type '%s' class %d size %zu base %s members %zu", name, class, size, tname,
              nmembers);
    if (class != NC_ENUM) return;
    char ename[NC_MAX_NAME + 1];
    nc_type ebase;
    size_t esize, emembers;
    CHECK(nc_inq_enum(ncid, id, ename, &ebase, &esize, &emembers));
    if (strcmp(ename, name) || ebase != base || esize != size || emembers != nmembers)
        trace_add(tr, "  nc_inq_enum differs");
    for (int m = 0; m < (int)nmembers; m++) {
        char mname[NC_MAX_NAME + 1], ident[NC_MAX_NAME + 1];
        unsigned char value[8] = {0};
        CHECK(nc_inq_enum_member(ncid, id, m, mname, value));
        long long v = value_at(base, value);
        trace_add(tr, "  member %d '%s' = %lld", m, mname, v);
        rc = nc_inq_enum_ident(ncid, id, v, ident);
        if (rc != NC_NOERR || strcmp(ident, mname)) trace_add(tr, "  ident of %lld -> %d", v, rc);
    }
    trace_add(tr, "  member %d -> %d", (int)nmembers,
              nc_inq_enum_member(ncid, id, (int)nmembers, name, NULL));
    trace_add(tr, "  ident of 12345 -> %d", nc_inq_enum_ident(ncid, id, 12345, name));
}

static void trace_atts(trace *tr, int ncid, int varid) {
    int natts;
    CHECK(nc_inq_varnatts(ncid, varid, &natts));
    for (int a = 0; a < natts; a++) {
        char name[NC_MAX_NAME + 1], tname[NC_MAX_NAME + 1];
        nc_type type;
        size_t len;
        CHECK(nc_inq_attname(ncid, varid, a, name));
        CHECK(nc_inq_att(ncid, varid, name, &type, &len));
        CHECK(nc_inq_type(ncid, type, tname, NULL));
        char line[512];
        int n = snprintf(line, sizeof line, "  att '%s' %s[%zu]", name, tname, len);
        if (type > NC_STRING) {
            nc_type base;
            CHECK(nc_inq_user_type(ncid, type, NULL, NULL, &base, NULL, NULL));
            unsigned char values[64] = {0};
            size_t width = 0;
            CHECK(nc_inq_type(ncid, base, NULL, &width));
            if (len * width <= sizeof values) {
                CHECK(nc_get_att(ncid, varid, name, values));
                for (size_t i = 0; i < len; i++)
                    n += snprintf(line + n, sizeof line - (size_t)n, " %lld",
                                  value_at(base, values + i * width));
            }
            int ints[8];
            n += snprintf(line + n, sizeof line - (size_t)n, " (as int: %d)",
                          nc_get_att_int(ncid, varid, name, ints));
        }
        trace_add(tr, "%s", line);
    }
}

static void trace_var(trace *tr, int ncid, int varid) {
    char name[NC_MAX_NAME + 1], tname[NC_MAX_NAME + 1];
    nc_type type;
    int ndims, dimids[NC_MAX_VAR_DIMS];
    CHECK(nc_inq_var(ncid, varid, name, &type, &ndims, dimids, NULL));
    CHECK(nc_inq_type(ncid, type, tname, NULL));
    size_t n = 1;
    for (int d = 0; d < ndims; d++) {
        size_t len;
        CHECK(nc_inq_dimlen(ncid, dimids[d], &len));
        n *= len;
    }
    trace_add(tr, "var '%s' of %s, %zu values", name, tname, n);
    nc_type base = type;
    if (type > NC_STRING) CHECK(nc_inq_user_type(ncid, type, NULL, NULL, &base, NULL, NULL));
    size_t width;
    CHECK(nc_inq_type(ncid, base, NULL, &width));
    unsigned char *values = calloc(n ? n : 1, width);
    int rc = nc_get_var(ncid, varid, values);
    char line[1024];
    int at = snprintf(line, sizeof line, "  get -> %d:", rc);
    for (size_t i = 0; rc == NC_NOERR && i < n && at < (int)sizeof line - 32; i++)
        at += snprintf(line + at, sizeof line - (size_t)at, " %lld", value_at(base, values + i * width));
    trace_add(tr, "%s", line);
    free(values);
    int no_fill = -1;
    unsigned char fill[8] = {0};
    rc = nc_inq_var_fill(ncid, varid, &no_fill, fill);
    trace_add(tr, "  fill -> %d: nofill %d value %lld", rc, no_fill, value_at(base, fill));
    int endian = -1;
    rc = nc_inq_var_endian(ncid, varid, &endian);
    trace_add(tr, "  endian -> %d: %d", rc, endian);
    int ints[8];
    unsigned char bytes[8];
    if (n <= 8) {
        trace_add(tr, "  get as int -> %d", nc_get_var_int(ncid, varid, ints));
        trace_add(tr, "  get as uchar -> %d", nc_get_var_uchar(ncid, varid, bytes));
    }
    trace_atts(tr, ncid, varid);
}

static void trace_group(trace *tr, int ncid) {
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
    for (int i = 0; i < ngrps; i++) trace_group(tr, grps[i]);
}

/* The ids of the types named in the root and group "g" of an open dataset. */
static void find_types(int ncid, nc_type *cloud, nc_type *wide, nc_type *level) {
    int g;
    CHECK(nc_inq_typeid(ncid, "cloud_t", cloud));
    CHECK(nc_inq_typeid(ncid, "wide_t", wide));
    CHECK(nc_inq_ncid(ncid, "g", &g));
    CHECK(nc_inq_typeid(g, "level_t", level));
}

static void scenario(const target *t, trace *tr) {
    int ncid, g, n, v_sky, v_wide, v_level, v_scalar, v_quiet, tmp;
    nc_type cloud, wide, level, huge, spare;

    /* The classic model has no user-defined types. */
    CHECK(nc_create(t->path, NC_NETCDF4 | NC_CLASSIC_MODEL | NC_CLOBBER, &ncid));
    TRACE_RC(tr, nc_def_enum(ncid, NC_UBYTE, "cloud_t", &cloud));
    CHECK(nc_close(ncid));

    CHECK(nc_create(t->path, NC_NETCDF4 | NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "n", 4, &n));
    CHECK(nc_def_grp(ncid, "g", &g));
    TRACE_RC(tr, nc_def_enum(ncid, NC_UBYTE, "cloud_t", &cloud));
    unsigned char u8;
    u8 = 0;
    TRACE_RC(tr, nc_insert_enum(ncid, cloud, "clear", &u8));
    u8 = 2;
    TRACE_RC(tr, nc_insert_enum(ncid, cloud, "stratus", &u8));
    u8 = 255;
    TRACE_RC(tr, nc_insert_enum(ncid, cloud, "missing", &u8));
    TRACE_RC(tr, nc_def_enum(ncid, NC_INT64, "wide_t", &wide));
    long long i64 = INT64_MIN;
    TRACE_RC(tr, nc_insert_enum(ncid, wide, "lowest", &i64));
    i64 = INT64_MAX;
    TRACE_RC(tr, nc_insert_enum(ncid, wide, "highest", &i64));
    i64 = 0;
    TRACE_RC(tr, nc_insert_enum(ncid, wide, "zero", &i64));
    TRACE_RC(tr, nc_def_enum(g, NC_SHORT, "level_t", &level));
    short s16 = -1;
    TRACE_RC(tr, nc_insert_enum(g, level, "below", &s16));
    s16 = 300;
    TRACE_RC(tr, nc_insert_enum(g, level, "above", &s16));
    TRACE_RC(tr, nc_def_enum(ncid, NC_UINT64, "huge_t", &huge));
    unsigned long long u64 = UINT64_MAX;
    TRACE_RC(tr, nc_insert_enum(ncid, huge, "all_ones", &u64));
    /* No variable uses it. */
    TRACE_RC(tr, nc_def_enum(g, NC_USHORT, "spare_t", &spare));
    unsigned short u16 = 65535;
    TRACE_RC(tr, nc_insert_enum(g, spare, "top", &u16));

    /* Equal types: the same members in another order, and not the same members. */
    nc_type ab, ba, abc;
    TRACE_RC(tr, nc_def_enum(ncid, NC_INT, "ab_t", &ab));
    TRACE_RC(tr, nc_def_enum(ncid, NC_INT, "ba_t", &ba));
    TRACE_RC(tr, nc_def_enum(ncid, NC_INT, "abc_t", &abc));
    int one = 1, two_ = 2, three = 3;
    TRACE_RC(tr, nc_insert_enum(ncid, ab, "a", &one));
    TRACE_RC(tr, nc_insert_enum(ncid, ab, "b", &two_));
    TRACE_RC(tr, nc_insert_enum(ncid, ba, "b", &two_));
    TRACE_RC(tr, nc_insert_enum(ncid, ba, "a", &one));
    TRACE_RC(tr, nc_insert_enum(ncid, abc, "a", &one));
    TRACE_RC(tr, nc_insert_enum(ncid, abc, "b", &two_));
    TRACE_RC(tr, nc_insert_enum(ncid, abc, "c", &three));

    /* Names in use or not names, types that are none. */
    TRACE_RC(tr, nc_def_enum(ncid, NC_INT, "cloud_t", &tmp));
    TRACE_RC(tr, nc_def_enum(ncid, NC_INT, "a/b", &tmp));
    TRACE_RC(tr, nc_def_enum(ncid, NC_INT, "", &tmp));
    TRACE_RC(tr, nc_insert_enum(ncid, cloud, "x/y", &u8));
    TRACE_RC(tr, nc_insert_enum(ncid, 999, "z", &u8));
    TRACE_RC(tr, nc_insert_enum(ncid, NC_INT, "z", &u8));
    TRACE_RC(tr, nc_inq_enum_ident(ncid, NC_INT, 0, NULL));
    TRACE_RC(tr, nc_def_var(ncid, "bad", 999, 1, &n, &tmp));

    TRACE_RC(tr, nc_def_var(ncid, "sky", cloud, 1, &n, &v_sky));
    TRACE_RC(tr, nc_def_var(ncid, "wide", wide, 1, &n, &v_wide));
    TRACE_RC(tr, nc_def_var(g, "level", level, 1, &n, &v_level));
    TRACE_RC(tr, nc_def_var(g, "overhead", cloud, 0, NULL, &v_scalar));
    TRACE_RC(tr, nc_def_var(ncid, "quiet", cloud, 1, &n, &v_quiet));
    /* Two chunks, one never written: its values are the fill, after a reopen too. */
    int v_sparse;
    size_t half = 2;
    TRACE_RC(tr, nc_def_var(g, "sparse", level, 1, &n, &v_sparse));
    TRACE_RC(tr, nc_def_var_chunking(g, v_sparse, NC_CHUNKED, &half));
    s16 = -1;
    TRACE_RC(tr, nc_put_att(g, v_sparse, "_FillValue", level, 1, &s16));
    TRACE_RC(tr, nc_def_var_endian(ncid, v_quiet, NC_ENDIAN_LITTLE));
    TRACE_RC(tr, nc_def_var_endian(ncid, v_quiet, NC_ENDIAN_BIG));
    /* Members may still come while the definitions last. */
    u8 = 1;
    TRACE_RC(tr, nc_insert_enum(ncid, cloud, "cumulus", &u8));

    /* Fills: given with nc_def_var_fill, given as the attribute (one of another type is refused:
     * below, as netCDF-4 files then list an empty fill). */
    s16 = 300;
    TRACE_RC(tr, nc_def_var_fill(g, v_level, NC_FILL, &s16));
    u8 = 255;
    TRACE_RC(tr, nc_put_att(ncid, v_sky, "_FillValue", cloud, 1, &u8));
    TRACE_RC(tr, nc_def_var_fill(ncid, v_quiet, NC_NOFILL, NULL));

    /* Attributes of enum types. */
    unsigned char two[2] = {0, 2};
    TRACE_RC(tr, nc_put_att(ncid, NC_GLOBAL, "skies", cloud, 2, two));
    long long wides[3] = {INT64_MIN, 0, INT64_MAX};
    TRACE_RC(tr, nc_put_att(ncid, v_wide, "range", wide, 3, wides));
    s16 = -1;
    TRACE_RC(tr, nc_put_att(g, NC_GLOBAL, "floor", level, 1, &s16));
    /* Replaced by one of an atomic type, the attribute is of that type. */
    TRACE_RC(tr, nc_put_att(ncid, NC_GLOBAL, "replaced", cloud, 1, two));
    TRACE_RC(tr, nc_put_att_text(ncid, NC_GLOBAL, "replaced", 3, "abc"));
    /* Renamed and deleted, enum attributes keep their type. */
    TRACE_RC(tr, nc_put_att(ncid, NC_GLOBAL, "doomed", cloud, 1, two));
    TRACE_RC(tr, nc_rename_att(ncid, v_wide, "range", "span"));
    TRACE_RC(tr, nc_del_att(ncid, NC_GLOBAL, "doomed"));
    TRACE_RC(tr, nc_put_att(ncid, v_sky, "other", cloud, 1, two));
    /* Read as text, enum values are NC_ECHAR. */
    char text[4];
    TRACE_RC(tr, nc_get_att_text(ncid, NC_GLOBAL, "skies", text));
    trace_group(tr, ncid);
    TRACE_RC(tr, nc_enddef(ncid));
    /* Compared once committed (netCDF-4 files compare no type before). */
    nc_type pairs[][2] = {{ab, ba}, {ab, abc}, {ab, ab}, {cloud, wide}, {ab, NC_INT}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        int equal = -1;
        int rc = nc_inq_type_equal(ncid, pairs[i][0], ncid, pairs[i][1], &equal);
        trace_add(tr, "pair %zu equal -> %d: %d", i, rc, equal);
    }
    u8 = 7;
    TRACE_RC(tr, nc_insert_enum(ncid, cloud, "late", &u8));

    const unsigned char sky[4] = {0, 2, 1, 77};
    TRACE_RC(tr, nc_put_var(ncid, v_sky, sky));
    int ints[4] = {0, 1, 2, 0};
    TRACE_RC(tr, nc_put_var_int(ncid, v_sky, ints));
    TRACE_RC(tr, nc_put_var_uchar(ncid, v_sky, sky));
    size_t start = 1, count = 2;
    TRACE_RC(tr, nc_put_vara(ncid, v_wide, &start, &count, wides + 1));
    short levels[2] = {-1, 300};
    TRACE_RC(tr, nc_put_vara(g, v_level, &start, &count, levels));
    u8 = 2;
    TRACE_RC(tr, nc_put_var(g, v_scalar, &u8));
    size_t first = 0;
    TRACE_RC(tr, nc_put_vara(g, v_sparse, &first, &count, levels));
    TRACE_RC(tr, nc_get_var_text(ncid, v_sky, text));
    trace_add(tr, "-- in session");
    trace_group(tr, ncid);
    CHECK(nc_close(ncid));

    CHECK(nc_open(t->path, NC_WRITE, &ncid));
    trace_add(tr, "-- reopened");
    trace_group(tr, ncid);
    find_types(ncid, &cloud, &wide, &level);
    TRACE_RC(tr, nc_insert_enum(ncid, cloud, "later", &u8));
    TRACE_RC(tr, nc_redef(ncid));
    int v_more;
    TRACE_RC(tr, nc_def_var(ncid, "more", wide, 1, &n, &v_more));
    i64 = INT64_MAX;
    TRACE_RC(tr, nc_put_att(ncid, v_more, "_FillValue", wide, 1, &i64));
    TRACE_RC(tr, nc_enddef(ncid));
    i64 = INT64_MIN;
    start = 3;
    count = 1;
    TRACE_RC(tr, nc_put_vara(ncid, v_more, &start, &count, &i64));
    CHECK(nc_close(ncid));

    CHECK(nc_open(t->path, NC_NOWRITE, &ncid));
    trace_add(tr, "-- after adding a variable of a stored type");
    trace_group(tr, ncid);
    CHECK(nc_close(ncid));
}

/* What a Zarr store answers where an HDF5 file accepts a definition and fails when the
 * definitions end (or has no counterpart). */
static int zarr_only(const target *zr) {
    int ncid, n, v, tmp;
    nc_type e, c;
    unsigned char u8;
    CHECK(nc_create(zr->path, NC_NETCDF4 | NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "n", 2, &n));
    /* Only integer types are bases. */
    EXPECT_RC(nc_def_enum(ncid, NC_FLOAT, "f_t", &tmp), NC_EBADTYPE);
    EXPECT_RC(nc_def_enum(ncid, NC_CHAR, "c_t", &tmp), NC_EBADTYPE);
    EXPECT_RC(nc_def_enum(ncid, NC_STRING, "s_t", &tmp), NC_EBADTYPE);
    EXPECT_RC(nc_def_enum(ncid, 999, "x_t", &tmp), NC_EBADTYPE);
    CHECK(nc_def_enum(ncid, NC_UBYTE, "e_t", &e));
    /* Names and values once each. */
    u8 = 1;
    CHECK(nc_insert_enum(ncid, e, "one", &u8));
    EXPECT_RC(nc_insert_enum(ncid, e, "one", &u8), NC_ENAMEINUSE);
    EXPECT_RC(nc_insert_enum(ncid, e, "uno", &u8), NC_EINVAL);
    EXPECT_RC(nc_insert_enum(ncid, e, "null", NULL), NC_EINVAL);
    /* A compound type takes no enum members, but holds enum fields; the enum type takes members
     * still. */
    CHECK(nc_def_compound(ncid, 16, "c_t", &c));
    EXPECT_RC(nc_insert_enum(ncid, c, "x", &u8), NC_EBADTYPE);
    EXPECT_RC(nc_insert_compound(ncid, c, "e", 8, e), NC_NOERR);
    u8 = 2;
    EXPECT_RC(nc_insert_enum(ncid, e, "two", &u8), NC_NOERR);
    EXPECT_RC(nc_insert_compound(ncid, e, "i", 0, NC_INT), NC_EBADTYPE);
    CHECK(nc_insert_compound(ncid, c, "d", 0, NC_DOUBLE));
    /* An enum type has no fields (netCDF-4 files answer with its members). */
    EXPECT_RC(nc_inq_compound_field(ncid, e, 0, NULL, NULL, NULL, NULL, NULL), NC_EBADTYPE);

    /* A type without members ends no definitions; given one, they end. */
    nc_type empty;
    CHECK(nc_def_enum(ncid, NC_INT, "empty_t", &empty));
    CHECK(nc_def_var(ncid, "v", empty, 1, &n, &v));
    /* A fill is one value (netCDF-4 files refuse two, and then list an empty fill). */
    int two_fills[2] = {1, 1};
    EXPECT_RC(nc_put_att(ncid, v, "_FillValue", empty, 2, two_fills), NC_EINVAL);
    /* Nor is a fill of another enum type (netCDF-4 files list an empty one then). */
    CHECK(nc_def_enum(ncid, NC_INT, "other_t", &c));
    EXPECT_RC(nc_put_att(ncid, v, "_FillValue", c, 1, two_fills), NC_EBADTYPE);
    EXPECT_RC(nc_put_att_int(ncid, v, "_FillValue", NC_INT, 1, two_fills), NC_EBADTYPE);
    int attid;
    EXPECT_RC(nc_inq_attid(ncid, v, "_FillValue", &attid), NC_ENOTATT);
    /* Nor does an attribute of another type become it by a rename (netCDF-4 files keep it so,
     * and it would come back as another type's). */
    CHECK(nc_put_att_int(ncid, v, "not_fill", NC_INT, 1, two_fills));
    EXPECT_RC(nc_rename_att(ncid, v, "not_fill", "_FillValue"), NC_EBADTYPE);
    CHECK(nc_insert_enum(ncid, c, "one", two_fills));
    EXPECT_RC(nc_enddef(ncid), NC_EINVAL);
    int value = -3;
    EXPECT_RC(nc_insert_enum(ncid, empty, "minus_three", &value), NC_NOERR);
    EXPECT_RC(nc_enddef(ncid), NC_NOERR);
    /* Nor does a close: the dataset stays open, and closes once the type has a member. */
    nc_type late;
    CHECK(nc_redef(ncid));
    CHECK(nc_def_enum(ncid, NC_BYTE, "late_t", &late));
    EXPECT_RC(nc_close(ncid), NC_EINVAL);
    signed char minus = -1;
    EXPECT_RC(nc_insert_enum(ncid, late, "minus", &minus), NC_NOERR);
    CHECK(nc_enddef(ncid));
    /* Values move in the enum type only. */
    int ints[2] = {-3, -3};
    EXPECT_RC(nc_put_att_int(ncid, NC_GLOBAL, "as_int", empty, 1, ints), NC_EBADTYPE);
    EXPECT_RC(nc_put_var(ncid, v, ints), NC_NOERR);
    CHECK(nc_close(ncid));
    CHECK(nc_open(zr->path, NC_NOWRITE, &ncid));
    EXPECT_RC(nc_inq_typeid(ncid, "late_t", &late), NC_NOERR);
    /* The type mended after the refused nc_enddef holds its member, its variable the values. */
    char member[NC_MAX_NAME + 1] = "";
    int member_value = 0, back_values[2] = {0, 0};
    CHECK(nc_inq_typeid(ncid, "empty_t", &empty));
    EXPECT_RC(nc_inq_enum_member(ncid, empty, 0, member, &member_value), NC_NOERR);
    EXPECT(strcmp(member, "minus_three") == 0 && member_value == -3);
    CHECK(nc_inq_varid(ncid, "v", &v));
    CHECK(nc_get_var(ncid, v, back_values));
    EXPECT(back_values[0] == -3 && back_values[1] == -3);
    CHECK(nc_close(ncid));

    /* In pure Zarr the values are their base type's: the type is not kept. */
    char pure[4200];
    snprintf(pure, sizeof pure, "%s", zr->path);
    char *mode = strstr(pure, "mode=nczarr");
    if (mode) memmove(mode + 5, mode + 7, strlen(mode + 7) + 1);
    CHECK(nc_create(pure, NC_NETCDF4 | NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "n", 2, &n));
    CHECK(nc_def_enum(ncid, NC_UBYTE, "e_t", &e));
    CHECK(nc_insert_enum(ncid, e, "one", &u8));
    CHECK(nc_def_var(ncid, "v", e, 1, &n, &v));
    unsigned char two[2] = {1, 9};
    CHECK(nc_put_var(ncid, v, two));
    CHECK(nc_close(ncid));
    CHECK(nc_open(pure, NC_NOWRITE, &ncid));
    nc_type type;
    CHECK(nc_inq_vartype(ncid, v, &type));
    EXPECT(type == NC_UBYTE);
    unsigned char back[2] = {0, 0};
    CHECK(nc_get_var(ncid, v, back));
    EXPECT(back[0] == 1 && back[1] == 9);
    CHECK(nc_close(ncid));
    return explicit_failures;
}

int main(int argc, char **argv) {
    const char *dir = test_dir(argc, argv);
    target h5, zr;
    trace a = {0}, b = {0};
    make_targets(dir, "enum", &h5, &zr);
    scenario(&h5, &a);
    scenario(&zr, &b);
    int bad = trace_compare("enum types", &a, &b);
    make_targets(dir, "enum_refusals", &h5, &zr);
    bad += zarr_only(&zr);
    trace_free(&a);
    trace_free(&b);
    return bad ? 1 : 0;
}
