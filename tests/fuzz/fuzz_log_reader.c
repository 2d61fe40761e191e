/* SPDX-License-Identifier: MIT */
/* libFuzzer target: lib/save/log_reader.c's gl_log_reader_open on arbitrary
 * bytes, as `gpuleak --read` meets a log a killed process, a full disk or a
 * copy gone wrong left behind.
 *
 * Built by clang with -fsanitize=fuzzer,address,undefined (tests/Makefile.inc),
 * run briefly by tests/fuzz.test from the seeds in tests/fuzz/corpus_log:
 * recorded logs of versions 1 and 4 (the latter of a killed process, its ring
 * cut to eight slots), a fake-driver run's records written as versions 2 and
 * 3 (their checks recomputed), and a last record cut in its padding.
 * Besides crashes, leaks, undefined behaviour and timeouts, it checks what
 * must always hold:
 *   - a refused file gives one line, naming the file;
 *   - an opened file's summary is consistent (the records end inside the
 *     file, or in a last one's padding, staged ones aside; staged events are
 *     events; a process record was read);
 *   - opening the same bytes twice gives the same summary.
 * A violation aborts, so libFuzzer keeps the input as a crash.
 *
 * Only the reading is fuzzed, not the replay: the replay's dependencies (the
 * pipeline, the stack depot, modules, symbols) are stood in for below, and
 * abort if reached. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check/leak_check.h"
#include "python/py_code.h"
#include "save/log_modules.h"
#include "save/log_reader.h"
#include "save/log_writer.h"
#include "stack/modules.h"
#include "stack/stack_depot.h"
#include "symbol/symbolize.h"
#include "track/errors.h"
#include "track/tracker.h"
#include "fuzz_check.h"

/* ---- the replay's and the writer's dependencies: never reached by open ---- */

#define NOT_REACHED(what)                                                                          \
    do {                                                                                           \
        fprintf(stderr, "fuzz_log_reader: %s reached from open\n", what);                          \
        abort();                                                                                   \
    } while (0)

uint32_t (*gl_errors_capture_stack)(void);
uint64_t (*gl_tracker_seq_hint)(const struct gl_event *ev);
enum gl_leak_kind gl_leak_check_classify(const struct gl_block_info *b, void *arg)
{
    (void)b, (void)arg;
    NOT_REACHED("gl_leak_check_classify");
}
unsigned gl_log_modules_file_build_id(const char *path, uint8_t out[GL_LOG_BUILD_ID_MAX])
{
    (void)path, (void)out;
    NOT_REACHED("gl_log_modules_file_build_id");
}
void gl_log_writer_record(unsigned type, const uint8_t *body, size_t n)
{
    (void)type, (void)body, (void)n;
    NOT_REACHED("gl_log_writer_record");
}
void gl_modules_add_range(uintptr_t start, uintptr_t end, enum gl_modules_role role)
{
    (void)start, (void)end, (void)role;
    NOT_REACHED("gl_modules_add_range");
}
void gl_modules_clear(void) { NOT_REACHED("gl_modules_clear"); }
enum gl_modules_role gl_modules_role_for_path(const char *path)
{
    (void)path;
    NOT_REACHED("gl_modules_role_for_path");
}
uint32_t gl_py_code_restore(const struct gl_py_code *src)
{
    (void)src;
    NOT_REACHED("gl_py_code_restore");
}
uint32_t gl_stack_depot_intern(const uintptr_t *frames, unsigned n)
{
    (void)frames, (void)n;
    NOT_REACHED("gl_stack_depot_intern");
}
void gl_symbolize_set_objects(const struct gl_unloaded_object *objs, size_t n)
{
    (void)objs, (void)n;
    NOT_REACHED("gl_symbolize_set_objects");
}
void gl_symbolize_set_object_names(const struct gl_unloaded_object *objs, size_t n)
{
    (void)objs, (void)n;
    NOT_REACHED("gl_symbolize_set_object_names");
}

/* ---- the target ---- */

/* Open the bytes as a file; the summary copied out (its strings too) into
 * *sum and text, false with the error in err when refused. */
static bool open_bytes(const uint8_t *data, size_t size, struct gl_log_summary *sum, char *text,
                       size_t textlen, char *err, size_t errlen, char *path, size_t pathlen)
{
    int fd = memfd_create("fuzz.gl", MFD_CLOEXEC);
    CHECK(fd >= 0);
    CHECK(size == 0 || write(fd, data, size) == (ssize_t)size);
    snprintf(path, pathlen, "/proc/self/fd/%d", fd);
    err[0] = '\0';
    struct gl_log_file *f = gl_log_reader_open(path, err, errlen);
    bool ok = f != NULL;
    if (f) {
        gl_log_reader_summary(f, sum);
        snprintf(text, textlen, "%s|%s|%s|%s|%s|%s|%s|%s", sum->version ? sum->version : "-",
                 sum->command ? sum->command : "-", sum->exe ? sum->exe : "-",
                 sum->cwd ? sum->cwd : "-", sum->host ? sum->host : "-",
                 sum->options ? sum->options : "-", sum->last_mark ? sum->last_mark : "-",
                 sum->reach_why_not ? sum->reach_why_not : "-");
        sum->version = sum->command = sum->exe = sum->cwd = sum->host = sum->options = NULL;
        sum->last_mark = sum->reach_why_not = NULL;
        sum->header = NULL;
        gl_log_reader_close(f);
    }
    close(fd);
    return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct gl_log_summary a, b;
    static char ta[8192], tb[8192], ea[1024], eb[1024], pa[64], pb[64];
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    bool oa = open_bytes(data, size, &a, ta, sizeof ta, ea, sizeof ea, pa, sizeof pa);
    if (!oa) {
        /* One line, naming the file. */
        CHECK(ea[0] != '\0');
        CHECK(strchr(ea, '\n') == NULL);
        CHECK(strncmp(ea, pa, strlen(pa)) == 0);
    } else {
        /* The records end inside the file, or in the padding of a last one
         * cut there (its body whole); with a staging ring (version 4 on),
         * what was staged is read as records made past the file's end, in
         * the reader's own mapping. */
        unsigned version = size >= 10 ? (unsigned)(data[8] | data[9] << 8) : 0;
        bool ring = version >= 4 && size >= 64 && (data[56] | data[57] | data[58] | data[59]);
        CHECK(ring || a.read_to <= a.size + 3);
        CHECK(a.size == size);
        CHECK(a.staged <= a.events);
        CHECK(a.unread_bytes <= a.size);
        CHECK(strncmp(ta, "-|", 2) != 0); /* a process record: its version string */
    }
    bool ob = open_bytes(data, size, &b, tb, sizeof tb, eb, sizeof eb, pb, sizeof pb);
    CHECK(oa == ob);
    if (oa) {
        CHECK(memcmp(&a, &b, sizeof a) == 0);
        CHECK(strcmp(ta, tb) == 0);
    } else {
        /* The same message but for the descriptor's number in the path. */
        CHECK(strcmp(ea + strlen(pa), eb + strlen(pb)) == 0);
    }
    return 0;
}
