/* tests/unit/check_header.c compiled as C++: gpuleak.h must serve C++ programs. */
#include "check_header.c"
