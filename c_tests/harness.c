#define _XOPEN_SOURCE 700
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <ftw.h>

int explicit_failures;

const char *test_dir(int argc, char **argv) {
    const char *d = argc > 1 ? argv[1] : getenv("NCZARR_RS_TEST_DIR");
    if (d == NULL || d[0] != '/') {
        fprintf(stderr, "usage: %s /absolute/scratch/dir (or set NCZARR_RS_TEST_DIR)\n", argv[0]);
        exit(2);
    }
    mkdir(d, 0777);
    return d;
}

static int remove_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

void remove_path(const char *path) {
    nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

void make_targets(const char *dir, const char *name, target *h5, target *zr) {
    const char *mode = getenv("NCZARR_RS_MODE");
    char store[2048];
    if (strlen(dir) + strlen(name) > 1900 || (mode != NULL && strlen(mode) > 1000)) {
        fprintf(stderr, "scratch path or mode too long\n");
        exit(2);
    }
    if (mode == NULL || mode[0] == '\0') mode = "nczarr,file";
    h5->label = "hdf5";
    h5->is_zarr = 0;
    snprintf(h5->path, sizeof h5->path, "%s/%s.nc", dir, name);
    zr->label = "zarr";
    zr->is_zarr = 1;
    snprintf(store, sizeof store, "%s/%s.zarr", dir, name);
    snprintf(zr->path, sizeof zr->path, "file://%s#mode=%s", store, mode);
    remove_path(h5->path);
    remove_path(store);
}

void trace_add(trace *t, const char *fmt, ...) {
    va_list ap;
    char buf[8192];
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (t->len == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 256;
        t->lines = realloc(t->lines, t->cap * sizeof *t->lines);
        if (t->lines == NULL) abort();
    }
    t->lines[t->len] = strdup(buf);
    if (t->lines[t->len] == NULL) abort();
    t->len++;
}

void trace_free(trace *t) {
    for (size_t i = 0; i < t->len; i++) free(t->lines[i]);
    free(t->lines);
    t->lines = NULL;
    t->len = t->cap = 0;
}

int trace_rc_(trace *t, const char *what, int status) {
    trace_add(t, "%s -> %d", what, status);
    return status;
}

int trace_compare(const char *what, const trace *oracle, const trace *subject) {
    int bad = 0;
    if (getenv("NCZARR_RS_TRACE") != NULL)
        for (size_t i = 0; i < oracle->len; i++) printf("%s | %s\n", what, oracle->lines[i]);
    size_t n = oracle->len > subject->len ? oracle->len : subject->len;
    for (size_t i = 0; i < n; i++) {
        const char *a = i < oracle->len ? oracle->lines[i] : "(missing)";
        const char *b = i < subject->len ? subject->lines[i] : "(missing)";
        if (strcmp(a, b) != 0) {
            if (bad < 50) fprintf(stderr, "%s step %zu\n  hdf5: %s\n  zarr: %s\n", what, i, a, b);
            bad++;
        }
    }
    if (bad) fprintf(stderr, "%s: %d of %zu steps differ from the HDF5 oracle\n", what, bad, n);
    else printf("%s: %zu steps identical to the HDF5 oracle\n", what, n);
    return bad;
}

int small_round_trip(const char *path, int want_formatx) {
    int ncid, dims[2], varid, grp, bad = 0, fmt, mode;
    int data[4][5], back[4][5];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 5; j++) data[i][j] = i * 10 + j;
    CHECK(nc_create(path, NC_NETCDF4 | NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "y", 4, &dims[0]));
    CHECK(nc_def_dim(ncid, "x", 5, &dims[1]));
    CHECK(nc_def_grp(ncid, "g", &grp));
    CHECK(nc_def_var(grp, "v", NC_INT, 2, dims, &varid));
    CHECK(nc_put_att_text(ncid, NC_GLOBAL, "title", 4, "test"));
    CHECK(nc_enddef(ncid));
    CHECK(nc_put_var_int(grp, varid, &data[0][0]));
    CHECK(nc_close(ncid));
    CHECK(nc_open(path, NC_NOWRITE, &ncid));
    CHECK(nc_inq_format_extended(ncid, &fmt, &mode));
    if (fmt != want_formatx) {
        fprintf(stderr, "%s: extended format %d, expected %d\n", path, fmt, want_formatx);
        bad++;
    }
    CHECK(nc_inq_ncid(ncid, "g", &grp));
    CHECK(nc_inq_varid(grp, "v", &varid));
    CHECK(nc_get_var_int(grp, varid, &back[0][0]));
    if (memcmp(data, back, sizeof data) != 0) {
        fprintf(stderr, "%s: data read back differs\n", path);
        bad++;
    }
    /* Served by this library, not by a built-in NCZarr that answers the same format codes. */
    size_t plen = 0;
    char props[512] = "";
    CHECK(nc_inq_attlen(ncid, NC_GLOBAL, "_NCProperties", &plen));
    if (plen < sizeof props) CHECK(nc_get_att_text(ncid, NC_GLOBAL, "_NCProperties", props));
    if (strstr(props, "nczarr-rs=") == NULL) {
        fprintf(stderr, "%s: _NCProperties \"%s\" does not name nczarr-rs\n", path, props);
        bad++;
    }
    char title[5] = "";
    CHECK(nc_get_att_text(ncid, NC_GLOBAL, "title", title));
    if (memcmp(title, "test", 4) != 0) {
        fprintf(stderr, "%s: title read back differs\n", path);
        bad++;
    }
    CHECK(nc_close(ncid));
    return bad;
}
