/* The library's two C entry points. Uses the generated include/nczarr_rs.h when it is on the
 * include path, and otherwise declares them as DESIGN.md specifies. */
#ifndef NCZARR_RS_C_TESTS_API_H
#define NCZARR_RS_C_TESTS_API_H
#if defined(__has_include)
#if __has_include("nczarr_rs.h")
#include "nczarr_rs.h"
#define NCZARR_RS_HAVE_HEADER 1
#endif
#endif
#ifndef NCZARR_RS_HAVE_HEADER
int nczarr_rs_install(void);
int nczarr_rs_register_udf(int mode_flag);
#endif
#endif
