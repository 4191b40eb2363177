/* Paths the library repairs before libnetcdf infers a format, and those it must leave alone.
 * In the scratch directory, a Zarr store `x.zarr` and a classic netCDF file of the same bytes as
 * an in-memory dataset:
 * - nc_open("x.zarr") (plain path) opens the Zarr store (NCZarr format), whose nc_inq_path is
 *   "x.zarr";
 * - nc_open_mem("x.zarr", ...) opens the memory it is given, whatever the name says (classic);
 * - nc_create("plain.zarr") makes a netCDF-4/HDF5 file, not a Zarr store. */
#include "harness.h"

#include <netcdf_mem.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int expect(int cond, const char *what) {
    if (!cond) fprintf(stderr, "paths: %s\n", what);
    return cond ? 0 : 1;
}

int main(int argc, char **argv) {
    const char *dir = test_dir(argc, argv);
    char url[4096], mem_path[4096];
    int ncid, varid, dimid, format, bad = 0;
    remove_path(dir);
    char mk[4200];
    snprintf(mk, sizeof mk, "mkdir -p '%s'", dir);
    if (system(mk) != 0) return 1;
    if (chdir(dir) != 0) return 1;

    snprintf(url, sizeof url, "file://%s/x.zarr#mode=nczarr,file", dir);
    CHECK(nc_create(url, NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "zarr_dim", 3, &dimid));
    CHECK(nc_def_var(ncid, "in_zarr", NC_INT, 1, &dimid, &varid));
    CHECK(nc_close(ncid));

    snprintf(mem_path, sizeof mem_path, "%s/m.nc", dir);
    CHECK(nc_create(mem_path, NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "mem_dim", 2, &dimid));
    CHECK(nc_def_var(ncid, "in_memory", NC_SHORT, 1, &dimid, &varid));
    CHECK(nc_close(ncid));
    FILE *f = fopen(mem_path, "rb");
    if (!f) return 1;
    static unsigned char bytes[1 << 16];
    size_t size = fread(bytes, 1, sizeof bytes, f);
    fclose(f);

    CHECK(nc_open("x.zarr", NC_NOWRITE, &ncid));
    CHECK(nc_inq_format_extended(ncid, &format, NULL));
    bad += expect(format == NC_FORMATX_NCZARR, "plain path x.zarr is not served as NCZarr");
    bad += expect(nc_inq_varid(ncid, "in_zarr", &varid) == NC_NOERR, "x.zarr lacks in_zarr");
    /* The path as given, as for netCDF files: programs reopen it (netCDF4-python's "a" on a
     * name that is no file creates, clobbering the dataset). */
    size_t path_len = 0;
    char given[4096] = "";
    CHECK(nc_inq_path(ncid, &path_len, NULL));
    CHECK(nc_inq_path(ncid, NULL, given));
    bad += expect(path_len == 6 && strcmp(given, "x.zarr") == 0, "nc_inq_path is not x.zarr");
    CHECK(nc_close(ncid));
    CHECK(nc_open(url, NC_NOWRITE, &ncid));
    CHECK(nc_inq_path(ncid, &path_len, given));
    bad += expect(strncmp(given, "file://", 7) == 0 && path_len == strlen(given),
                  "nc_inq_path of a dataset opened by URL is not a URL");
    CHECK(nc_close(ncid));

    CHECK(nc_open_mem("x.zarr", NC_NOWRITE, size, bytes, &ncid));
    CHECK(nc_inq_format(ncid, &format));
    bad += expect(format == NC_FORMAT_CLASSIC, "nc_open_mem did not open the classic bytes");
    bad += expect(nc_inq_varid(ncid, "in_memory", &varid) == NC_NOERR,
                  "nc_open_mem(\"x.zarr\") read something other than its memory");
    CHECK(nc_close(ncid));

    CHECK(nc_create("plain.zarr", NC_CLOBBER | NC_NETCDF4, &ncid));
    CHECK(nc_close(ncid));
    f = fopen("plain.zarr", "rb");
    unsigned char magic[4] = {0};
    bad += expect(f && fread(magic, 1, 4, f) == 4 && memcmp(magic, "\x89HDF", 4) == 0,
                  "nc_create(\"plain.zarr\") did not make an HDF5 file");
    if (f) fclose(f);

    if (bad == 0) printf("paths: plain path, in-memory open and plain create ok\n");
    return bad ? 1 : 0;
}
