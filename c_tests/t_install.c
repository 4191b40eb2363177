/* A program that links the library and calls nczarr_rs_install() (no preload): NCZarr URLs are then
 * served by the library. The call is idempotent. */
#include "harness.h"
#include "nczarr_rs_api.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    const char *dir = test_dir(argc, argv);
    target h5, zr;
    int bad = 0;
    CHECK(nczarr_rs_install());
    CHECK(nczarr_rs_install());
    make_targets(dir, "install", &h5, &zr);
    bad += small_round_trip(zr.path, NC_FORMATX_NCZARR);
    if (bad == 0) printf("install: round trip through %s ok\n", zr.path);
    return bad ? 1 : 0;
}
