/* Reads into the caller's buffer: a whole 34 MiB variable into a fresh buffer and a small slab
 * into a small one, values checked against what was written, on the HDF5 oracle and on Zarr.
 * On Zarr, where the kernel has transparent huge pages, the large buffer's whole 2 MiB pages are
 * advised to use them (VmFlags "hg" in /proc/self/smaps: a fresh buffer is filled with one
 * fault per 2 MiB) and the small buffer is left alone. */
#include "harness.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NT 17
#define NY 512
#define NX 1024
#define HUGE_PAGE ((uintptr_t)2 << 20)

static float value_at(size_t i) { return (float)(i % 1000003) * 0.5f; }

/* 1 when the mapping holding `addr` carries VmFlags `flag`, 0 when not, -1 when unknown. */
static int mapping_has_flag(const void *addr, const char *flag) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[1024];
    int inside = 0, found = -1;
    uintptr_t a = (uintptr_t)addr;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            inside = a >= lo && a < hi;
            continue;
        }
        if (inside && strncmp(line, "VmFlags:", 8) == 0) {
            char padded[1024];
            snprintf(padded, sizeof padded, "%s ", line + 8);
            char want[16];
            snprintf(want, sizeof want, " %s ", flag);
            found = strstr(padded, want) != NULL;
            break;
        }
    }
    fclose(f);
    return found;
}

static int huge_pages_available(void) {
    return access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0;
}

static int check(const target *t) {
    int ncid, dims[3], varid, bad = 0;
    const size_t n = (size_t)NT * NY * NX, chunks[3] = {1, NY, NX};
    float *data = malloc(n * sizeof *data);
    if (!data) return 1;
    for (size_t i = 0; i < n; i++) data[i] = value_at(i);
    CHECK(nc_create(t->path, NC_NETCDF4 | NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "t", NT, &dims[0]));
    CHECK(nc_def_dim(ncid, "y", NY, &dims[1]));
    CHECK(nc_def_dim(ncid, "x", NX, &dims[2]));
    CHECK(nc_def_var(ncid, "v", NC_FLOAT, 3, dims, &varid));
    CHECK(nc_def_var_chunking(ncid, varid, NC_CHUNKED, chunks));
    CHECK(nc_enddef(ncid));
    CHECK(nc_put_var_float(ncid, varid, data));
    CHECK(nc_close(ncid));
    free(data);

    CHECK(nc_open(t->path, NC_NOWRITE, &ncid));
    float *big = malloc(n * sizeof *big);
    float small[64];
    if (!big) return 1;
    CHECK(nc_get_var_float(ncid, 0, big));
    size_t start[3] = {3, 7, 11}, count[3] = {1, 2, 32};
    CHECK(nc_get_vara_float(ncid, 0, start, count, small));
    CHECK(nc_close(ncid));
    for (size_t i = 0; i < n; i++) {
        if (big[i] != value_at(i)) {
            fprintf(stderr, "%s: element %zu is %g, not %g\n", t->label, i, big[i], value_at(i));
            bad++;
            break;
        }
    }
    for (size_t r = 0; r < 2; r++)
        for (size_t c = 0; c < 32; c++) {
            size_t i = (3 * NY + 7 + r) * NX + 11 + c;
            if (small[r * 32 + c] != value_at(i)) {
                fprintf(stderr, "%s: small read %zu,%zu is wrong\n", t->label, r, c);
                bad++;
            }
        }
    if (t->is_zarr && huge_pages_available()) {
        const void *page = (const void *)(((uintptr_t)big + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1));
        int big_hg = mapping_has_flag(page, "hg"), small_hg = mapping_has_flag(small, "hg");
        if (big_hg != 1) {
            fprintf(stderr, "%s: the 34 MiB output buffer was not advised to use huge pages (%d)\n",
                    t->label, big_hg);
            bad++;
        }
        if (small_hg != 0) {
            fprintf(stderr, "%s: a 256-byte output buffer was advised to use huge pages (%d)\n",
                    t->label, small_hg);
            bad++;
        }
    }
    free(big);
    return bad;
}

int main(int argc, char **argv) {
    const char *dir = test_dir(argc, argv);
    target h5, zr;
    make_targets(dir, "output_buffer", &h5, &zr);
    int bad = check(&h5) + check(&zr);
    return bad ? 1 : 0;
}
