/* The user-defined-format route: nczarr_rs_register_udf(NC_UDF0), then `#mode=udf0,file` URLs
 * reach the library; the dataset reports the UDF0 extended format. */
#include "harness.h"
#include "nczarr_rs_api.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    const char *dir = test_dir(argc, argv);
    char store[2048], url[4096];
    int ncid;
    CHECK(nczarr_rs_register_udf(NC_UDF0));
    snprintf(store, sizeof store, "%s/udf0.zarr", dir);
    remove_path(store);
    snprintf(url, sizeof url, "file://%s#mode=udf0,file", store);
    int bad = small_round_trip(url, NC_FORMATX_UDF0);
    /* A plain path with the NC_UDF0 mode flag reaches the library too (reference notes §4.5). */
    int rc = nc_open(store, NC_NOWRITE | NC_UDF0, &ncid);
    if (rc != NC_NOERR) {
        fprintf(stderr, "opening the plain path %s with NC_UDF0: %s\n", store, nc_strerror(rc));
        bad++;
    } else {
        CHECK(nc_close(ncid));
    }
    if (bad == 0) printf("udf0: round trip ok\n");
    return bad ? 1 : 0;
}
