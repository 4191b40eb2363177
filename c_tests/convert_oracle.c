/* Oracle for src/api/convert.rs: what netcdf-c's netCDF-4 layer returns when a value stored
 * as one atomic type is read back through every numeric memory type.
 *
 * For each numeric file type it writes a variable holding representative values (limits,
 * zero, +-1, fractions, values just outside the narrower types, inf, nan), then reads every
 * element back with nc_get_var1_<memtype> for all ten numeric memory types and prints one
 * line per read:
 *
 *     get <file type> <stored value> <memory type> <value read> <ok|range|error code>
 *
 * Integers print exactly, floats with %.9g and doubles with %.17g (both round-trip).
 * A final section writes ubyte values into a byte variable and reads byte values as ubyte,
 * in a netCDF-4 file and in a classic-model one, to show the classic-model exemption:
 *
 *     <put|classic-put> <memory type> <value written> <file type> <value stored> <status>
 *     <get|classic-get> <file type> <stored value> <memory type> <value read> <status>
 *
 * Build and run (regenerates tests/data/convert_oracle.txt):
 *
 *     gcc -Wall -Wextra -Werror -O2 -o /tmp/convert_oracle c_tests/convert_oracle.c -lnetcdf
 *     /tmp/convert_oracle /tmp/convert_oracle.nc > tests/data/convert_oracle.txt
 */

#include <float.h>
#include <math.h>
#include <netcdf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                 \
    do {                                                                            \
        int check_status_ = (call);                                                 \
        if (check_status_ != NC_NOERR) {                                            \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,           \
                    nc_strerror(check_status_));                                    \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const nc_type NUMERIC[] = {NC_BYTE,   NC_SHORT, NC_INT,  NC_FLOAT, NC_DOUBLE, NC_UBYTE,
                                  NC_USHORT, NC_UINT,  NC_INT64, NC_UINT64};
#define NTYPES (COUNT(NUMERIC))

static const signed char V_BYTE[] = {-128, -127, -1, 0, 1, 126, 127};
static const unsigned char V_UBYTE[] = {0, 1, 126, 127, 128, 254, 255};
static const short V_SHORT[] = {-32768, -129, -128, -1, 0, 1, 127, 128, 255, 256, 32767};
static const unsigned short V_USHORT[] = {0, 1, 127, 128, 255, 256, 32767, 32768, 65535};
static const int V_INT[] = {
    INT32_MIN, -32769, -32768, -129, -128, -1, 0, 1, 127, 128, 255, 256, 32767, 32768, 65535,
    65536, 16777217, INT32_MAX,
};
static const unsigned int V_UINT[] = {
    0, 1, 127, 128, 255, 256, 32767, 32768, 65535, 65536, 16777217u, 2147483647u, 2147483648u,
    4294967295u,
};
static const long long V_INT64[] = {
    INT64_MIN, -4294967296LL, -2147483649LL, INT32_MIN, -32769, -129, -1, 0, 1, 255, 256, 65535,
    65536, INT32_MAX, 2147483648LL, 4294967295LL, 4294967296LL, 9007199254740993LL, INT64_MAX,
};
static const unsigned long long V_UINT64[] = {
    0ULL, 1ULL, 127ULL, 128ULL, 255ULL, 256ULL, 65535ULL, 65536ULL, 2147483647ULL,
    2147483648ULL, 4294967295ULL, 4294967296ULL, 9007199254740993ULL, 9223372036854775807ULL,
    9223372036854775808ULL, 18446744073709551615ULL,
};
static const float V_FLOAT[] = {
    -FLT_MAX, -1e20f, -9223372036854775808.0f, -4294967296.0f, -2147483904.0f, -2147483648.0f,
    -65536.0f, -32769.0f, -32768.5f, -32768.0f, -256.0f, -129.0f, -128.5f, -128.0f, -1.5f,
    -1.0f, -0.5f, -0.0f, 0.0f, 0.5f, 0.99f, 1.0f, 1.5f, 2.5f, 127.0f, 127.5f, 128.0f, 200.0f,
    255.0f, 255.5f, 256.0f, 300.0f, 32767.0f, 32767.5f, 32768.0f, 65535.0f, 65535.5f, 65536.0f,
    70000.0f, 16777216.0f, 2147483520.0f, 2147483648.0f, 4294967040.0f, 4294967296.0f, 1e10f,
    9223371487098961920.0f, 9223372036854775808.0f, 18446742974197923840.0f,
    18446744073709551616.0f, 1e20f, FLT_MAX, INFINITY, -INFINITY, NAN,
};
static const double V_DOUBLE[] = {
    -DBL_MAX, -1e300, -3.4028235677973366e38, -(double)FLT_MAX, -9223372036854777856.0,
    -9223372036854775808.0, -4294967296.0, -2147483649.0, -2147483648.5, -2147483648.0,
    -32768.5, -32768.0, -128.5, -128.0, -1.5, -1.0, -0.5, -0.0, 0.0, 1e-320, 1e-40, 0.5, 1.0,
    1.5, 2.5, 0.1, 127.5, 128.0, 255.5, 256.0, 300.0, 32767.5, 65535.5, 65536.0, 2147483647.0,
    2147483647.5, 2147483648.0, 4294967295.0, 4294967295.5, 4294967296.0, 1e10, 16777217.0,
    9007199254740993.0, 9223372036854774784.0, 9223372036854775808.0, 18446744073709549568.0,
    18446744073709551616.0, 1e20, (double)FLT_MAX, 3.4028235e38, 3.4028235677973366e38, 1e39,
    DBL_MAX, INFINITY, -INFINITY, NAN,
};

static const char *type_name(nc_type t) {
    switch (t) {
    case NC_BYTE: return "byte";
    case NC_UBYTE: return "ubyte";
    case NC_SHORT: return "short";
    case NC_USHORT: return "ushort";
    case NC_INT: return "int";
    case NC_UINT: return "uint";
    case NC_INT64: return "int64";
    case NC_UINT64: return "uint64";
    case NC_FLOAT: return "float";
    case NC_DOUBLE: return "double";
    default: return "?";
    }
}

/* One value of any numeric type. */
typedef union {
    signed char b;
    unsigned char ub;
    short s;
    unsigned short us;
    int i;
    unsigned int ui;
    long long ll;
    unsigned long long ull;
    float f;
    double d;
} value;

static void print_value(nc_type t, const value *v) {
    switch (t) {
    case NC_BYTE: printf("%d", v->b); break;
    case NC_UBYTE: printf("%u", v->ub); break;
    case NC_SHORT: printf("%d", v->s); break;
    case NC_USHORT: printf("%u", v->us); break;
    case NC_INT: printf("%d", v->i); break;
    case NC_UINT: printf("%u", v->ui); break;
    case NC_INT64: printf("%lld", v->ll); break;
    case NC_UINT64: printf("%llu", v->ull); break;
    case NC_FLOAT: printf("%.9g", (double)v->f); break;
    case NC_DOUBLE: printf("%.17g", v->d); break;
    default: printf("?"); break;
    }
}

static int get_one(int ncid, int varid, size_t index, nc_type mem, value *out) {
    const size_t idx[1] = {index};
    switch (mem) {
    case NC_BYTE: return nc_get_var1_schar(ncid, varid, idx, &out->b);
    case NC_UBYTE: return nc_get_var1_uchar(ncid, varid, idx, &out->ub);
    case NC_SHORT: return nc_get_var1_short(ncid, varid, idx, &out->s);
    case NC_USHORT: return nc_get_var1_ushort(ncid, varid, idx, &out->us);
    case NC_INT: return nc_get_var1_int(ncid, varid, idx, &out->i);
    case NC_UINT: return nc_get_var1_uint(ncid, varid, idx, &out->ui);
    case NC_INT64: return nc_get_var1_longlong(ncid, varid, idx, &out->ll);
    case NC_UINT64: return nc_get_var1_ulonglong(ncid, varid, idx, &out->ull);
    case NC_FLOAT: return nc_get_var1_float(ncid, varid, idx, &out->f);
    case NC_DOUBLE: return nc_get_var1_double(ncid, varid, idx, &out->d);
    default: return NC_EBADTYPE;
    }
}

static const char *status_name(int status) {
    switch (status) {
    case NC_NOERR: return "ok";
    case NC_ERANGE: return "range";
    default: return nc_strerror(status);
    }
}

static const void *values_of(nc_type t, size_t *n) {
    switch (t) {
    case NC_BYTE: *n = COUNT(V_BYTE); return V_BYTE;
    case NC_UBYTE: *n = COUNT(V_UBYTE); return V_UBYTE;
    case NC_SHORT: *n = COUNT(V_SHORT); return V_SHORT;
    case NC_USHORT: *n = COUNT(V_USHORT); return V_USHORT;
    case NC_INT: *n = COUNT(V_INT); return V_INT;
    case NC_UINT: *n = COUNT(V_UINT); return V_UINT;
    case NC_INT64: *n = COUNT(V_INT64); return V_INT64;
    case NC_UINT64: *n = COUNT(V_UINT64); return V_UINT64;
    case NC_FLOAT: *n = COUNT(V_FLOAT); return V_FLOAT;
    case NC_DOUBLE: *n = COUNT(V_DOUBLE); return V_DOUBLE;
    default: *n = 0; return NULL;
    }
}

static size_t type_size(int ncid, nc_type t) {
    size_t size = 0;
    CHECK(nc_inq_type(ncid, t, NULL, &size));
    return size;
}

static void netcdf4_matrix(const char *path) {
    int ncid, dimids[NTYPES], varids[NTYPES];
    char name[NC_MAX_NAME + 1];
    size_t t, m, i, n;

    CHECK(nc_create(path, NC_NETCDF4 | NC_CLOBBER, &ncid));
    for (t = 0; t < NTYPES; t++) {
        values_of(NUMERIC[t], &n);
        snprintf(name, sizeof name, "n_%s", type_name(NUMERIC[t]));
        CHECK(nc_def_dim(ncid, name, n, &dimids[t]));
        CHECK(nc_def_var(ncid, type_name(NUMERIC[t]), NUMERIC[t], 1, &dimids[t], &varids[t]));
        CHECK(nc_def_var_fill(ncid, varids[t], NC_NOFILL, NULL));
    }
    CHECK(nc_enddef(ncid));
    for (t = 0; t < NTYPES; t++)
        CHECK(nc_put_var(ncid, varids[t], values_of(NUMERIC[t], &n)));
    CHECK(nc_close(ncid));

    CHECK(nc_open(path, NC_NOWRITE, &ncid));
    for (t = 0; t < NTYPES; t++) {
        const unsigned char *stored = values_of(NUMERIC[t], &n);
        size_t size = type_size(ncid, NUMERIC[t]);
        for (i = 0; i < n; i++) {
            for (m = 0; m < NTYPES; m++) {
                value in, out;
                int status;
                memcpy(&in, stored + i * size, size);
                status = get_one(ncid, varids[t], i, NUMERIC[m], &out);
                printf("get %s ", type_name(NUMERIC[t]));
                print_value(NUMERIC[t], &in);
                printf(" %s ", type_name(NUMERIC[m]));
                print_value(NUMERIC[m], &out);
                printf(" %s\n", status_name(status));
            }
        }
    }
    CHECK(nc_close(ncid));
}

/* Byte <-> ubyte through a byte variable, in a netCDF-4 or classic-model file. */
static void byte_ubyte(const char *path, int classic) {
    static const unsigned char written[] = {0, 1, 127, 128, 255};
    static const signed char stored[] = {-128, -1, 0, 1, 127};
    const char *prefix = classic ? "classic-" : "";
    int ncid, dimid, varid, status;
    size_t i, idx[1];
    signed char b;
    unsigned char ub;

    CHECK(nc_create(path, NC_NETCDF4 | NC_CLOBBER | (classic ? NC_CLASSIC_MODEL : 0), &ncid));
    CHECK(nc_def_dim(ncid, "n", COUNT(written), &dimid));
    CHECK(nc_def_var(ncid, "b", NC_BYTE, 1, &dimid, &varid));
    CHECK(nc_enddef(ncid));
    for (i = 0; i < COUNT(written); i++) {
        idx[0] = i;
        status = nc_put_var1_uchar(ncid, varid, idx, &written[i]);
        CHECK(nc_get_var1_schar(ncid, varid, idx, &b));
        printf("%sput ubyte %u byte %d %s\n", prefix, written[i], b, status_name(status));
    }
    CHECK(nc_put_var_schar(ncid, varid, stored));
    for (i = 0; i < COUNT(stored); i++) {
        idx[0] = i;
        status = nc_get_var1_uchar(ncid, varid, idx, &ub);
        printf("%sget byte %d ubyte %u %s\n", prefix, stored[i], ub, status_name(status));
    }
    CHECK(nc_close(ncid));
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "/tmp/convert_oracle.nc";
    netcdf4_matrix(path);
    byte_ubyte(path, 0);
    byte_ubyte(path, 1);
    return 0;
}
