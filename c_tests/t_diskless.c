/* NC_DISKLESS and NC_PERSIST, traced on an HDF5 file (the oracle) and on a Zarr store:
 * - create diskless: the dataset works while open and leaves nothing behind at close;
 * - create diskless + persist: it is stored at close;
 * - open diskless for writing: changes (data, attributes, renames, new variables) are seen while
 *   open and the stored dataset is unchanged after close;
 * - open diskless read-only: reads as usual. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 6

/* The filesystem path behind a target (a URL's path for Zarr). */
static void fs_path(const target *t, char *out, size_t len) {
    const char *p = t->path;
    if (strncmp(p, "file://", 7) == 0) p += 7;
    snprintf(out, len, "%s", p);
    char *hash = strchr(out, '#');
    if (hash) *hash = '\0';
}

static void trace_exists(trace *tr, const target *t, const char *when) {
    char p[4096];
    fs_path(t, p, sizeof p);
    trace_add(tr, "%s: stored=%d", when, access(p, F_OK) == 0);
}

static void trace_values(trace *tr, int ncid, const char *name) {
    int varid, vals[N];
    int rc = TRACE_RC(tr, nc_inq_varid(ncid, name, &varid));
    if (rc) return;
    if (TRACE_RC(tr, nc_get_var_int(ncid, varid, vals)) == NC_NOERR)
        trace_add(tr, "%s = %d %d %d %d %d %d", name, vals[0], vals[1], vals[2], vals[3], vals[4], vals[5]);
    size_t len = 0;
    if (nc_inq_attlen(ncid, varid, "note", &len) == NC_NOERR) trace_add(tr, "%s:note len %zu", name, len);
}

static void define_and_write(trace *tr, int ncid, int base) {
    int dim, varid, vals[N];
    for (int i = 0; i < N; i++) vals[i] = base + i;
    TRACE_RC(tr, nc_def_dim(ncid, "x", N, &dim));
    TRACE_RC(tr, nc_def_var(ncid, "v", NC_INT, 1, &dim, &varid));
    TRACE_RC(tr, nc_enddef(ncid));
    TRACE_RC(tr, nc_put_var_int(ncid, varid, vals));
}

static void run(const target *t, trace *tr) {
    int ncid;

    /* 1. diskless create */
    remove_path(t->path);
    if (TRACE_RC(tr, nc_create(t->path, NC_NETCDF4 | NC_DISKLESS, &ncid)) == NC_NOERR) {
        define_and_write(tr, ncid, 10);
        trace_values(tr, ncid, "v");
        TRACE_RC(tr, nc_close(ncid));
    }
    trace_exists(tr, t, "after diskless create");

    /* 2. diskless + persist create */
    if (TRACE_RC(tr, nc_create(t->path, NC_NETCDF4 | NC_DISKLESS | NC_PERSIST, &ncid)) == NC_NOERR) {
        define_and_write(tr, ncid, 20);
        TRACE_RC(tr, nc_close(ncid));
    }
    trace_exists(tr, t, "after persisted create");
    if (TRACE_RC(tr, nc_open(t->path, NC_NOWRITE, &ncid)) == NC_NOERR) {
        trace_values(tr, ncid, "v");
        TRACE_RC(tr, nc_close(ncid));
    }

    /* 3. diskless open for writing: changes are visible, then gone */
    if (TRACE_RC(tr, nc_open(t->path, NC_WRITE | NC_DISKLESS, &ncid)) == NC_NOERR) {
        int varid, dim, w, vals[N] = {-1, -2, -3, -4, -5, -6};
        TRACE_RC(tr, nc_inq_varid(ncid, "v", &varid));
        TRACE_RC(tr, nc_put_var_int(ncid, varid, vals));
        TRACE_RC(tr, nc_redef(ncid));
        TRACE_RC(tr, nc_put_att_text(ncid, varid, "note", 5, "added"));
        TRACE_RC(tr, nc_rename_var(ncid, varid, "renamed"));
        TRACE_RC(tr, nc_inq_dimid(ncid, "x", &dim));
        TRACE_RC(tr, nc_def_var(ncid, "w", NC_INT, 1, &dim, &w));
        TRACE_RC(tr, nc_enddef(ncid));
        TRACE_RC(tr, nc_sync(ncid));
        trace_values(tr, ncid, "renamed");
        trace_values(tr, ncid, "w");
        TRACE_RC(tr, nc_close(ncid));
    }
    if (TRACE_RC(tr, nc_open(t->path, NC_NOWRITE, &ncid)) == NC_NOERR) {
        int nvars = -1;
        TRACE_RC(tr, nc_inq_nvars(ncid, &nvars));
        trace_add(tr, "stored nvars %d", nvars);
        trace_values(tr, ncid, "v");
        trace_values(tr, ncid, "renamed");
        TRACE_RC(tr, nc_close(ncid));
    }

    /* 4. diskless read-only open */
    if (TRACE_RC(tr, nc_open(t->path, NC_NOWRITE | NC_DISKLESS, &ncid)) == NC_NOERR) {
        trace_values(tr, ncid, "v");
        TRACE_RC(tr, nc_close(ncid));
    }
    trace_exists(tr, t, "at end");
    remove_path(t->path);
}

int main(int argc, char **argv) {
    const char *dir = test_dir(argc, argv);
    target h5, zr;
    trace oracle = {0}, subject = {0};
    make_targets(dir, "diskless", &h5, &zr);
    run(&h5, &oracle);
    run(&zr, &subject);
    int bad = trace_compare("diskless", &oracle, &subject);
    trace_free(&oracle);
    trace_free(&subject);
    return bad ? 1 : 0;
}
