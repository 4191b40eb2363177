/* Shared helpers for the C tests: targets (an HDF5 netCDF-4 file as the oracle, a Zarr store as the
 * subject), a trace of every call's result per target, and the comparison of two traces. */
#ifndef NCZARR_RS_C_TESTS_HARNESS_H
#define NCZARR_RS_C_TESTS_HARNESS_H

#include <netcdf.h>
#include <stdarg.h>
#include <stddef.h>

typedef struct {
    const char *label;  /* "hdf5" or "zarr" */
    char path[4096];    /* file path or URL */
    int is_zarr;
} target;

typedef struct {
    char **lines;
    size_t len, cap;
} trace;

/* Directory for scratch files: argv[1], else $NCZARR_RS_TEST_DIR, else fails. */
const char *test_dir(int argc, char **argv);

/* Fills h5 with <dir>/<name>.nc and zr with file://<dir>/<name>.zarr#mode=<$NCZARR_RS_MODE or
 * nczarr,file>. Removes what a previous run left. */
void make_targets(const char *dir, const char *name, target *h5, target *zr);

void trace_add(trace *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void trace_free(trace *t);

/* Prints every differing line (and the whole oracle trace when $NCZARR_RS_TRACE is set); returns the number of differences. */
int trace_compare(const char *what, const trace *oracle, const trace *subject);

/* Aborts the test (exit 1) with the netCDF message when status is not NC_NOERR. */
#define CHECK(call)                                                                   \
    do {                                                                              \
        int check_status_ = (call);                                                   \
        if (check_status_ != NC_NOERR) {                                              \
            fprintf(stderr, "%s:%d: %s -> %d (%s)\n", __FILE__, __LINE__, #call,      \
                    check_status_, nc_strerror(check_status_));                       \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

/* Failures of explicit expectations, counted over the whole test program. */
extern int explicit_failures;

/* Counts (and prints) a failure when `cond` does not hold; the test goes on. */
#define EXPECT(cond)                                                                  \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond);         \
            explicit_failures++;                                                      \
        }                                                                             \
    } while (0)

/* Records `call`'s status in the trace under a label and evaluates to the status. */
#define TRACE_RC(tr, call) trace_rc_((tr), #call, (call))
int trace_rc_(trace *t, const char *what, int status);

/* Command to remove a path recursively (a store directory or a file). */
void remove_path(const char *path);



/* Creates a small dataset at `path` (a URL), writes it, reopens it and checks every value and the
 * extended format. Returns the number of failures (each printed). */
int small_round_trip(const char *path, int want_formatx);

#endif
