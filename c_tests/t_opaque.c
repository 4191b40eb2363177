/* Opaque types defined through the public netCDF API (nc_def_opaque, nc_inq_opaque) and
 * variables and attributes of them: types of several sizes, one of another group, one no variable
 * uses, a scalar, a fill given with nc_def_var_fill and one given as the _FillValue attribute, a
 * variable without fill, chunks never written, attributes of opaque types on the dataset and on a
 * variable (replaced, renamed, deleted), a compound type with an opaque field, and the error codes
 * of what netCDF refuses (other types, text, byte orders, names, sizes). Traced in the session,
 * after a reopen and after adding a variable of a stored type, the trace must equal the same
 * program's on an HDF5 file. Where a Zarr store answers otherwise (or an HDF5 file has no
 * counterpart) the test has explicit expectations. */
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

/* Appends `n` bytes at `p` in hex to `line` (of `cap` bytes, `at` used); returns the new length. */
static int hex(char *line, size_t cap, int at, const unsigned char *p, size_t n) {
    at += snprintf(line + at, cap - (size_t)at, " 0X");
    for (size_t i = 0; i < n && at < (int)cap - 4; i++)
        at += snprintf(line + at, cap - (size_t)at, "%02X", p[i]);
    return at;
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
    if (class == NC_OPAQUE) {
        char oname[NC_MAX_NAME + 1];
        size_t osize;
        CHECK(nc_inq_opaque(ncid, id, oname, &osize));
        if (strcmp(oname, name) || osize != size) trace_add(tr, "  nc_inq_opaque differs");
        trace_add(tr, "  field 0 -> %d",
                  nc_inq_compound_field(ncid, id, 0, NULL, NULL, NULL, NULL, NULL));
        trace_add(tr, "  member 0 -> %d", nc_inq_enum_member(ncid, id, 0, name, NULL));
    }
    for (int f = 0; class == NC_COMPOUND && f < (int)nfields; f++) {
        char fname[NC_MAX_NAME + 1], tname[NC_MAX_NAME + 1];
        size_t offset;
        nc_type ftype;
        int ndims;
        CHECK(nc_inq_compound_field(ncid, id, f, fname, &offset, &ftype, &ndims, NULL));
        CHECK(nc_inq_type(ncid, ftype, tname, NULL));
        trace_add(tr, "  field '%s' at %zu of %s, %d dims", fname, offset, tname, ndims);
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
        char line[512];
        int n = snprintf(line, sizeof line, "  att '%s' %s[%zu]", name, tname, len);
        unsigned char values[128] = {0};
        if (len * size <= sizeof values) {
            int rc = nc_get_att(ncid, varid, name, values);
            n += snprintf(line + n, sizeof line - (size_t)n, " get -> %d:", rc);
            if (type > NC_STRING && rc == NC_NOERR)
                for (size_t i = 0; i < len; i++)
                    n = hex(line, sizeof line, n, values + i * size, size);
        }
        if (type > NC_STRING) {
            int ints[32];
            char text[128];
            unsigned char bytes[128];
            n += snprintf(line + n, sizeof line - (size_t)n, " (int %d, text %d, uchar %d)",
                          nc_get_att_int(ncid, varid, name, ints),
                          nc_get_att_text(ncid, varid, name, text),
                          nc_get_att_uchar(ncid, varid, name, bytes));
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
    unsigned char *values = calloc(n ? n : 1, size);
    int rc = nc_get_var(ncid, varid, values);
    char line[1024];
    int at = snprintf(line, sizeof line, "  get -> %d:", rc);
    for (size_t i = 0; rc == NC_NOERR && i < n && at < (int)sizeof line - 40; i++)
        at = hex(line, sizeof line, at, values + i * size, size);
    trace_add(tr, "%s", line);
    free(values);
    int no_fill = -1;
    unsigned char fill[64];
    memset(fill, 0xEE, sizeof fill);
    rc = nc_inq_var_fill(ncid, varid, &no_fill, fill);
    at = snprintf(line, sizeof line, "  fill -> %d: nofill %d", rc, no_fill);
    hex(line, sizeof line, at, fill, size < sizeof fill ? size : sizeof fill);
    trace_add(tr, "%s", line);
    int endian = -1;
    rc = nc_inq_var_endian(ncid, varid, &endian);
    trace_add(tr, "  endian -> %d: %d", rc, endian);
    if (type > NC_STRING && n <= 8) {
        int ints[8];
        unsigned char bytes[8 * 64];
        char text[8 * 64];
        trace_add(tr, "  get as int -> %d, uchar -> %d, text -> %d",
                  nc_get_var_int(ncid, varid, ints), nc_get_var_uchar(ncid, varid, bytes),
                  nc_get_var_text(ncid, varid, text));
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

static void scenario(const target *t, trace *tr) {
    int ncid, g, n, v_raw, v_blob, v_scalar, v_quiet, v_sparse, v_obs, tmp;
    nc_type raw, blob, spare, twin, other, obs;

    /* The classic model has no user-defined types. */
    CHECK(nc_create(t->path, NC_NETCDF4 | NC_CLASSIC_MODEL | NC_CLOBBER, &ncid));
    TRACE_RC(tr, nc_def_opaque(ncid, 3, "raw_t", &raw));
    CHECK(nc_close(ncid));

    CHECK(nc_create(t->path, NC_NETCDF4 | NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "n", 4, &n));
    CHECK(nc_def_grp(ncid, "g", &g));
    TRACE_RC(tr, nc_def_opaque(ncid, 3, "raw_t", &raw));
    TRACE_RC(tr, nc_def_opaque(g, 8, "blob_t", &blob));
    TRACE_RC(tr, nc_def_opaque(g, 1, "spare_t", &spare));
    TRACE_RC(tr, nc_def_opaque(ncid, 3, "twin_t", &twin));
    TRACE_RC(tr, nc_def_opaque(ncid, 5, "other_t", &other));

    /* Names in use or not names. */
    TRACE_RC(tr, nc_def_opaque(ncid, 3, "raw_t", &tmp));
    TRACE_RC(tr, nc_def_opaque(ncid, 3, "a/b", &tmp));
    TRACE_RC(tr, nc_def_opaque(ncid, 3, "", &tmp));
    TRACE_RC(tr, nc_def_opaque(ncid, 3, NULL, &tmp));
    /* An opaque type holds no fields and no members. */
    TRACE_RC(tr, nc_insert_compound(ncid, raw, "x", 0, NC_INT));
    unsigned char u8 = 1;
    TRACE_RC(tr, nc_insert_enum(ncid, raw, "x", &u8));

    /* A compound type with an opaque field. */
    TRACE_RC(tr, nc_def_compound(ncid, 8, "obs_t", &obs));
    TRACE_RC(tr, nc_insert_compound(ncid, obs, "id", 0, NC_INT));
    TRACE_RC(tr, nc_insert_compound(ncid, obs, "tag", 4, raw));

    TRACE_RC(tr, nc_def_var(ncid, "raw", raw, 1, &n, &v_raw));
    TRACE_RC(tr, nc_def_var(g, "blob", blob, 1, &n, &v_blob));
    TRACE_RC(tr, nc_def_var(g, "one", raw, 0, NULL, &v_scalar));
    TRACE_RC(tr, nc_def_var(ncid, "quiet", other, 1, &n, &v_quiet));
    TRACE_RC(tr, nc_def_var(ncid, "obs", obs, 1, &n, &v_obs));
    /* Two chunks, one never written: its values are the fill, after a reopen too. */
    size_t half = 2;
    TRACE_RC(tr, nc_def_var(g, "sparse", raw, 1, &n, &v_sparse));
    TRACE_RC(tr, nc_def_var_chunking(g, v_sparse, NC_CHUNKED, &half));
    TRACE_RC(tr, nc_put_att(g, v_sparse, "_FillValue", raw, 1, "\x01\x02\x03"));
    TRACE_RC(tr, nc_def_var_endian(ncid, v_quiet, NC_ENDIAN_LITTLE));
    TRACE_RC(tr, nc_def_var_endian(ncid, v_quiet, NC_ENDIAN_BIG));
    TRACE_RC(tr, nc_def_var_endian(ncid, v_obs, NC_ENDIAN_BIG));

    /* Fills: given with nc_def_var_fill, given as the attribute. */
    TRACE_RC(tr, nc_def_var_fill(g, v_blob, NC_FILL, "\xFF\xFE\xFD\xFC\xFB\xFA\xF9\xF8"));
    TRACE_RC(tr, nc_put_att(ncid, v_raw, "_FillValue", raw, 1, "xyz"));
    TRACE_RC(tr, nc_def_var_fill(ncid, v_quiet, NC_NOFILL, NULL));

    /* Attributes of opaque types. */
    TRACE_RC(tr, nc_put_att(ncid, NC_GLOBAL, "stamps", raw, 2, "abcdef"));
    TRACE_RC(tr, nc_put_att(ncid, v_raw, "key", other, 1, "\x00\x01\x02\x03\x04"));
    TRACE_RC(tr, nc_put_att(g, NC_GLOBAL, "seal", blob, 1, "12345678"));
    TRACE_RC(tr, nc_put_att(ncid, NC_GLOBAL, "none", raw, 0, "abc"));
    /* Replaced by one of an atomic type, the attribute is of that type. */
    TRACE_RC(tr, nc_put_att(ncid, NC_GLOBAL, "replaced", raw, 1, "abc"));
    TRACE_RC(tr, nc_put_att_text(ncid, NC_GLOBAL, "replaced", 3, "abc"));
    /* And the other way round. */
    TRACE_RC(tr, nc_put_att_text(ncid, NC_GLOBAL, "became", 3, "abc"));
    TRACE_RC(tr, nc_put_att(ncid, NC_GLOBAL, "became", other, 1, "abcde"));
    /* Renamed and deleted, opaque attributes keep their type. */
    TRACE_RC(tr, nc_put_att(ncid, NC_GLOBAL, "doomed", raw, 1, "abc"));
    TRACE_RC(tr, nc_rename_att(ncid, v_raw, "key", "lock"));
    TRACE_RC(tr, nc_del_att(ncid, NC_GLOBAL, "doomed"));
    trace_group(tr, ncid);
    TRACE_RC(tr, nc_enddef(ncid));
    /* Compared once committed (netCDF-4 files compare no type before). */
    nc_type pairs[][2] = {{raw, twin}, {raw, other}, {raw, raw}, {raw, NC_UBYTE}, {raw, obs}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        int equal = -1;
        int rc = nc_inq_type_equal(ncid, pairs[i][0], ncid, pairs[i][1], &equal);
        trace_add(tr, "pair %zu equal -> %d: %d", i, rc, equal);
    }

    TRACE_RC(tr, nc_put_var(ncid, v_raw, "abcdefghijkl"));
    unsigned char bytes[12] = "ABCDEFGHIJKL";
    TRACE_RC(tr, nc_put_var_uchar(ncid, v_raw, bytes));
    TRACE_RC(tr, nc_put_var_text(ncid, v_raw, "ABCDEFGHIJKL"));
    size_t start = 1, count = 2;
    TRACE_RC(tr, nc_put_vara(g, v_blob, &start, &count, "0123456789abcdef"));
    TRACE_RC(tr, nc_put_var(g, v_scalar, "\x00\x7F\x80"));
    size_t first = 0;
    TRACE_RC(tr, nc_put_vara(g, v_sparse, &first, &count, "ABCDEF"));
    struct {
        int id;
        unsigned char tag[3];
    } recs[4];
    /* The byte after each tag is padding: zeroed, as the trace prints it. */
    memset(recs, 0, sizeof recs);
    for (int i = 0; i < 4; i++) {
        recs[i].id = i + 1;
        recs[i].tag[0] = (unsigned char)('a' + 2 * i);
        recs[i].tag[1] = (unsigned char)('b' + 2 * i);
    }
    TRACE_RC(tr, nc_put_var(ncid, v_obs, recs));
    /* A part read in the variable's own type. */
    unsigned char back[64] = {0};
    TRACE_RC(tr, nc_get_vara(ncid, v_raw, &first, &count, back));
    char line[128];
    int at = snprintf(line, sizeof line, "part of raw:");
    hex(line, sizeof line, at, back, 6);
    trace_add(tr, "%s", line);
    /* A fill whose attribute is deleted stays the fill (netCDF-4 keeps it). */
    int v_dropped;
    TRACE_RC(tr, nc_redef(ncid));
    TRACE_RC(tr, nc_def_var(ncid, "dropped", raw, 1, &n, &v_dropped));
    TRACE_RC(tr, nc_put_att(ncid, v_dropped, "_FillValue", raw, 1, "\x11\x22\x33"));
    TRACE_RC(tr, nc_del_att(ncid, v_dropped, "_FillValue"));
    TRACE_RC(tr, nc_enddef(ncid));
    trace_add(tr, "-- in session");
    trace_group(tr, ncid);
    CHECK(nc_close(ncid));

    CHECK(nc_open(t->path, NC_WRITE, &ncid));
    trace_add(tr, "-- reopened");
    trace_group(tr, ncid);
    CHECK(nc_inq_typeid(ncid, "raw_t", &raw));
    TRACE_RC(tr, nc_redef(ncid));
    int v_more;
    TRACE_RC(tr, nc_def_var(ncid, "more", raw, 1, &n, &v_more));
    TRACE_RC(tr, nc_put_att(ncid, v_more, "_FillValue", raw, 1, "\xAA\xBB\xCC"));
    TRACE_RC(tr, nc_put_att(ncid, NC_GLOBAL, "later", raw, 1, "def"));
    TRACE_RC(tr, nc_def_opaque(ncid, 2, "late_t", &tmp));
    TRACE_RC(tr, nc_enddef(ncid));
    start = 3;
    count = 1;
    TRACE_RC(tr, nc_put_vara(ncid, v_more, &start, &count, "zzz"));
    CHECK(nc_close(ncid));

    CHECK(nc_open(t->path, NC_NOWRITE, &ncid));
    trace_add(tr, "-- after adding a variable of a stored type");
    trace_group(tr, ncid);
    CHECK(nc_close(ncid));
}

/* What a Zarr store answers where an HDF5 file answers otherwise or has no counterpart. */
static int zarr_only(const target *zr) {
    int ncid, n, v, tmp;
    nc_type raw;
    CHECK(nc_create(zr->path, NC_NETCDF4 | NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "n", 2, &n));
    /* A size of no bytes, or more than a record may hold. */
    EXPECT_RC(nc_def_opaque(ncid, 0, "empty_t", &tmp), NC_EINVAL);
    EXPECT_RC(nc_def_opaque(ncid, (size_t)1 << 40, "huge_t", &tmp), NC_EINVAL);
    CHECK(nc_def_opaque(ncid, 4, "raw_t", &raw));
    CHECK(nc_def_var(ncid, "v", raw, 1, &n, &v));
    /* A fill is one value of the variable's own type. */
    EXPECT_RC(nc_put_att(ncid, v, "_FillValue", raw, 2, "abcdefgh"), NC_EINVAL);
    int attid;
    EXPECT_RC(nc_inq_attid(ncid, v, "_FillValue", &attid), NC_ENOTATT);
    /* Values of another type are not opaque values (netCDF-4 files answer NC_EDAPURL and
     * list an empty attribute). */
    int ints[4] = {1, 2, 3, 4};
    EXPECT_RC(nc_put_att_int(ncid, NC_GLOBAL, "as_int", raw, 1, ints), NC_EBADTYPE);
    EXPECT_RC(nc_put_att_uchar(ncid, NC_GLOBAL, "as_uchar", raw, 4, (unsigned char *)"abcd"),
              NC_EBADTYPE);
    EXPECT_RC(nc_inq_attid(ncid, NC_GLOBAL, "as_int", &attid), NC_ENOTATT);
    EXPECT_RC(nc_inq_attid(ncid, NC_GLOBAL, "as_uchar", &attid), NC_ENOTATT);
    CHECK(nc_put_att_int(ncid, v, "not_fill", NC_INT, 1, &n));
    EXPECT_RC(nc_rename_att(ncid, v, "not_fill", "_FillValue"), NC_EBADTYPE);
    /* An attribute of a type equal to another keeps its own after a reopen (netCDF-4 files
     * give it the first equal type's). */
    nc_type twin;
    CHECK(nc_def_opaque(ncid, 4, "twin_t", &twin));
    CHECK(nc_put_att(ncid, NC_GLOBAL, "twinned", twin, 1, "abcd"));
    CHECK(nc_enddef(ncid));
    CHECK(nc_put_var(ncid, v, "abcdefgh"));
    CHECK(nc_close(ncid));
    CHECK(nc_open(zr->path, NC_NOWRITE, &ncid));
    nc_type stored_type;
    size_t stored_len;
    CHECK(nc_inq_typeid(ncid, "twin_t", &twin));
    CHECK(nc_inq_att(ncid, NC_GLOBAL, "twinned", &stored_type, &stored_len));
    EXPECT(stored_type == twin && stored_len == 1);
    CHECK(nc_close(ncid));

    /* In Zarr v3 shards (raw bytes move as they are), read back after a reopen. */
    char v3[4200];
    snprintf(v3, sizeof v3, "%s", zr->path);
    char *file = strstr(v3, ",file");
    if (file) {
        memmove(file + 3, file, strlen(file) + 1);
        memcpy(file, ",v3", 3);
    }
    int d6;
    CHECK(nc_create(v3, NC_NETCDF4 | NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "m", 6, &d6));
    CHECK(nc_def_opaque(ncid, 3, "raw_t", &raw));
    CHECK(nc_def_var(ncid, "sharded", raw, 1, &d6, &v));
    size_t shard = 6;
    CHECK(nc_def_var_chunking(ncid, v, NC_CHUNKED, &shard));
    int inner = 2;
    CHECK(nc_put_att_int(ncid, v, "_InnerChunkSizes", NC_INT, 1, &inner));
    CHECK(nc_put_att(ncid, v, "_FillValue", raw, 1, "---"));
    CHECK(nc_enddef(ncid));
    size_t start = 0, count = 2;
    CHECK(nc_put_vara(ncid, v, &start, &count, "abcdef"));
    CHECK(nc_close(ncid));
    CHECK(nc_open(v3, NC_NOWRITE, &ncid));
    char sharded[19] = "";
    EXPECT_RC(nc_get_var(ncid, v, sharded), NC_NOERR);
    EXPECT(memcmp(sharded, "abcdef------------", 18) == 0);
    CHECK(nc_close(ncid));

    /* In pure Zarr an opaque variable is a numpy void array (|V4): it reads back as values of
     * an opaque type named after it. */
    char pure[4200];
    snprintf(pure, sizeof pure, "%s", zr->path);
    char *mode = strstr(pure, "mode=nczarr");
    if (mode) memmove(mode + 5, mode + 7, strlen(mode + 7) + 1);
    CHECK(nc_create(pure, NC_NETCDF4 | NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "n", 2, &n));
    CHECK(nc_def_opaque(ncid, 4, "raw_t", &raw));
    CHECK(nc_def_var(ncid, "v", raw, 1, &n, &v));
    CHECK(nc_put_var(ncid, v, "abcdefgh"));
    CHECK(nc_close(ncid));
    CHECK(nc_open(pure, NC_NOWRITE, &ncid));
    nc_type type;
    CHECK(nc_inq_vartype(ncid, v, &type));
    char name[NC_MAX_NAME + 1] = "";
    size_t size = 0;
    int class = 0;
    CHECK(nc_inq_user_type(ncid, type, name, &size, NULL, NULL, &class));
    EXPECT(class == NC_OPAQUE && size == 4 && strcmp(name, "v_t") == 0);
    char back[9] = "";
    CHECK(nc_get_var(ncid, v, back));
    EXPECT(memcmp(back, "abcdefgh", 8) == 0);
    CHECK(nc_close(ncid));
    return explicit_failures;
}

int main(int argc, char **argv) {
    const char *dir = test_dir(argc, argv);
    target h5, zr;
    trace a = {0}, b = {0};
    make_targets(dir, "opaque", &h5, &zr);
    scenario(&h5, &a);
    scenario(&zr, &b);
    int bad = trace_compare("opaque types", &a, &b);
    make_targets(dir, "opaque_refusals", &h5, &zr);
    bad += zarr_only(&zr);
    trace_free(&a);
    trace_free(&b);
    return bad ? 1 : 0;
}
