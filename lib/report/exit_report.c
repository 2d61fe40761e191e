#include "exit_report.h"

#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/leak_check.h"
#include "analyze/suppress.h"
#include "common/env.h"
#include "common/paths.h"
#include "report_json.h"
#include "report_xml.h"
#include "frame_filter.h"
#include "report_text.h"
#include "runtime.h"
#include "symbolize.h"
#include "track/event.h"
#include "track/modules.h"
#include "track/profile.h"
#include "track/stack_depot.h"
#include "track/tool_alloc.h"
#include "track/tracker.h"

#define MAX_DEVICES 64

/* Driver calls made at report time, outside any callback, before CUDA tears down.
 * The driver is already loaded; it is looked up, never loaded by gpuleak. */
struct driver {
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*device_get_name)(char *, int, CUdevice);
    CUresult (*mem_get_address_range)(CUdeviceptr *, size_t *, CUdeviceptr);
};

struct report_env {
    struct gl_symbolizer *sym;
    struct driver drv;
    char names[MAX_DEVICES][128];
    bool named[MAX_DEVICES];
};

static void load_driver(struct driver *d)
{
    memset(d, 0, sizeof *d);
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return;
    *(void **)&d->device_get = dlsym(h, "cuDeviceGet");
    *(void **)&d->device_get_name = dlsym(h, "cuDeviceGetName");
    *(void **)&d->mem_get_address_range = dlsym(h, "cuMemGetAddressRange_v2");
    dlclose(h); /* still loaded by the program */
}

static const char *device_name(int device, void *arg)
{
    struct report_env *env = arg;
    if (device < 0 || device >= MAX_DEVICES)
        return NULL;
    if (!env->named[device]) {
        env->named[device] = true;
        CUdevice dev;
        if (env->drv.device_get && env->drv.device_get_name &&
            env->drv.device_get(&dev, device) == CUDA_SUCCESS &&
            env->drv.device_get_name(env->names[device], sizeof env->names[device], dev) ==
                CUDA_SUCCESS)
            return env->names[device];
        env->names[device][0] = '\0';
    }
    return env->names[device][0] ? env->names[device] : NULL;
}

static void frame_lookup(uintptr_t ip, unsigned index, struct gl_frame *out,
                         enum gl_module_role *role, void *arg)
{
    (void)index;
    struct report_env *env = arg;
    *role = gl_module_role(ip);
    if (env->sym) {
        gl_symbolize(env->sym, ip, true, out);
    } else {
        memset(out, 0, sizeof *out);
        out->ip = ip;
    }
}

/* All the frames kept for a stack, for suppression matching. */
static unsigned match_frames(uint32_t stack, struct gl_frame *out, unsigned max, void *arg)
{
    unsigned n;
    const uintptr_t *ips = gl_depot_frames(stack, &n);
    return ips ? gl_frame_filter(ips, n, frame_lookup, arg, gl_rt.opt.show_below_main, out, max)
               : 0;
}

static void add_default(const char *path, void *arg)
{
    struct gl_supp_set *s = arg;
    char err[512];
    if (gl_supp_load_file(s, path, err, sizeof err) < 0)
        gl_rt_message("gpuleak: %s", err);
}

/* --suppressions files, then the defaults installed beside the runtime (unless
 * the launcher already listed them: it passes --default-suppressions=no then). */
static void load_suppressions(struct gl_supp_set *s)
{
    gl_supp_set_init(s);
    char err[512];
    for (int i = 0; gl_options_suppression(&gl_rt.opt, i); i++)
        if (gl_supp_load_file(s, gl_options_suppression(&gl_rt.opt, i), err, sizeof err) < 0)
            gl_rt_message("gpuleak: %s", err);
    if (!gl_rt.opt.default_suppressions)
        return;
    Dl_info info;
    if (dladdr((void *)&gl_exit_report, &info) && info.dli_fname) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", info.dli_fname);
        char *slash = strrchr(dir, '/');
        if (slash) {
            *slash = '\0';
            gl_default_suppressions(dir, true, add_default, s);
        }
    }
}

/* --xml-file and --json-file. */
static void write_document(const char *option, const char *tmpl,
                           void (*writer)(struct gl_out *, const struct gl_report_input *),
                           const struct gl_report_input *in)
{
    int fd = gl_rt_open_output(option, tmpl);
    if (fd < 0)
        return;
    struct gl_out o;
    gl_out_init(&o, fd, in->pid);
    writer(&o, in);
    if (!gl_out_flush(&o))
        gl_rt_message("gpuleak: %s: write failed", option);
    close(fd);
}

static unsigned stack_frames(uint32_t stack, struct gl_frame *out, unsigned max, void *arg)
{
    unsigned n;
    const uintptr_t *ips = gl_depot_frames(stack, &n);
    return ips ? gl_frame_filter(ips, n, frame_lookup, arg, gl_rt.opt.show_below_main, out, max)
               : 0;
}

static size_t vmm_mappings(uint64_t handle_key, uint64_t *addrs, size_t max, void *arg)
{
    (void)arg;
    return gl_tracker_vmm_mappings(handle_key, addrs, max, NULL);
}

/* Sizes the callbacks could not know are found now: memory opened through IPC
 * is asked of the driver, an imported VMM handle measured by its mappings. */
static void resolve_sizes(struct report_env *env, struct gl_block_info *blocks, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct gl_block_info *b = &blocks[i];
        if (!(b->flags & GL_BLK_SIZE_UNKNOWN))
            continue;
        if (gl_key_ns(b->key) == GL_NS_VMM_HANDLE) {
            uint64_t mapped = 0;
            gl_tracker_vmm_mappings(b->key, NULL, 0, &mapped);
            if (mapped) {
                b->size = mapped;
                b->flags &= (uint8_t)~GL_BLK_SIZE_UNKNOWN;
            }
            continue;
        }
        if (gl_key_ns(b->key) != GL_NS_ADDR || !env->drv.mem_get_address_range)
            continue;
        CUdeviceptr base;
        size_t size;
        if (env->drv.mem_get_address_range(&base, &size, (CUdeviceptr)b->key) == CUDA_SUCCESS) {
            b->size = size;
            b->flags &= (uint8_t)~GL_BLK_SIZE_UNKNOWN;
        }
    }
}

/* GPULEAK_BENCH=profile: where the hot path's time went. */
static void profile_report(struct gl_out *o, struct report_env *env)
{
    gl_out_line(o, "%s", "");
    gl_out_line(o, "profile (GPULEAK_BENCH=profile): average per call, timer cost included");
    for (int p = 0; p < GL_PROF_NPHASES; p++)
        if (gl_prof_calls((enum gl_prof_phase)p))
            gl_out_line(o, "  %-22s %10llu calls %9.1f ns",
                        gl_prof_phase_name((enum gl_prof_phase)p),
                        (unsigned long long)gl_prof_calls((enum gl_prof_phase)p),
                        gl_prof_avg_ns((enum gl_prof_phase)p));
    const uintptr_t *ips;
    const uint64_t *ns;
    uint64_t bt_ns, total = 0;
    int n = gl_prof_walk(&ips, &ns, &bt_ns);
    if (n <= 0)
        return;
    for (int i = 0; i < n; i++)
        total += ns[i];
    if (!env->sym)
        env->sym = gl_symbolizer_open();
    gl_out_line(o, "  one stack: unw_backtrace %llu ns; unw_step walk of %d frames %llu ns:",
                (unsigned long long)bt_ns, n, (unsigned long long)total);
    for (int i = 0; i < n; i++) {
        struct gl_frame f = {.ip = ips[i]};
        if (env->sym)
            gl_symbolize(env->sym, ips[i], true, &f);
        gl_out_line(o, "    #%-2d %7llu ns  %s (%s)", i, (unsigned long long)ns[i],
                    f.function ? f.function : "???", f.object ? f.object : "?");
    }
}

void gl_exit_report(void)
{
    int expected = GL_RT_TRACKING;
    if (!atomic_compare_exchange_strong(&gl_rt.state, &expected, GL_RT_REPORTED))
        return;
    if (getpid() != gl_rt.pid)
        return;

    struct report_env env;
    memset(&env, 0, sizeof env);
    load_driver(&env.drv);

    struct gl_block_info *blocks = NULL;
    size_t n = 0, snap_bytes = 0;
    if (gl_tracker_snapshot(&blocks, &n, &snap_bytes) < 0) {
        gl_rt_message("gpuleak: out of memory while taking the leak snapshot; no report");
        return;
    }
    resolve_sizes(&env, blocks, n);

    struct gl_leak_result leaks;
    if (gl_leak_check(blocks, n, gl_classify_all_definite, NULL, &leaks) < 0) {
        gl_tool_unmap(blocks, snap_bytes);
        gl_rt_message("gpuleak: out of memory during the leak check; no report");
        return;
    }
    struct gl_tracker_stats stats;
    gl_tracker_stats(&stats);

    struct gl_supp_set supps;
    load_suppressions(&supps);
    bool documents = gl_rt.opt.xml || gl_rt.opt.json_file[0];
    if ((gl_rt.opt.leak_check == GL_LEAK_CHECK_FULL || supps.n > 0 || documents) &&
        leaks.nrecords > 0)
        env.sym = gl_symbolizer_open();
    gl_suppress_records(&leaks, &supps, match_frames, &env);

    char *argv_buf = NULL, **argv = NULL, *opt_buf = NULL, **opt_argv = NULL;
    int argc = documents ? gl_rt_program_argv(&argv_buf, &argv) : 0;
    const char *env_opts = getenv(GL_OPTIONS_ENV);
    int opt_argc = documents && env_opts ? gl_options_split_env(env_opts, &opt_buf, &opt_argv) : 0;

    struct gl_report_input in = {
        .opt = &gl_rt.opt,
        .tool_version = PACKAGE_VERSION,
        .command = gl_rt.command,
        .leaks = &leaks,
        .stats = &stats,
        .supps = &supps,
        .main_tid = (int)gl_rt.pid,
        .pid = (int)gl_rt.pid,
        .ppid = (int)getppid(),
        .elapsed_s = gl_rt_elapsed(),
        .argc = argc > 0 ? argc : 0,
        .argv = (const char *const *)argv,
        .tool_argc = opt_argc > 0 ? opt_argc : 0,
        .tool_argv = (const char *const *)opt_argv,
        .device_name = device_name,
        .stack_frames = stack_frames,
        .vmm_mappings = vmm_mappings,
        .arg = &env,
    };

    bool must_close;
    int fd = gl_rt_open_log(&must_close);
    struct gl_out out;
    gl_out_init(&out, fd, (int)gl_rt.pid);
    gl_report_preamble(&out, &in);
    gl_report_leaks(&out, &in);
    if (gl_rt.opt.verbose > 0 && !gl_rt.opt.quiet) {
        char b1[GL_U64_COMMAS_LEN], b2[GL_U64_COMMAS_LEN];
        gl_out_line(&out, "%s", "");
        gl_out_line(&out, "gpuleak: %u distinct allocation stacks; tracking memory %s bytes",
                    gl_depot_count(),
                    gl_fmt_u64_commas(b1, gl_tracker_memory_bytes() + gl_depot_memory_bytes()));
        if (stats.unknown_frees || stats.replaced)
            gl_out_line(
                &out, "gpuleak: %s frees of untracked addresses, %s allocations at live addresses",
                gl_fmt_u64_commas(b1, stats.unknown_frees), gl_fmt_u64_commas(b2, stats.replaced));
    }
    if (gl_profiling)
        profile_report(&out, &env);
    gl_out_flush(&out);
    if (must_close)
        close(fd);
    if (gl_rt.opt.xml)
        write_document("--xml-file", gl_rt.opt.xml_file, gl_report_xml, &in);
    if (gl_rt.opt.json_file[0])
        write_document("--json-file", gl_rt.opt.json_file, gl_report_json, &in);
    gl_rt_status("report errors=%llu", (unsigned long long)gl_report_error_count(&in));

    free(argv);
    free(argv_buf);
    free(opt_argv);
    free(opt_buf);
    gl_supp_set_free(&supps);
    gl_symbolizer_close(env.sym);
    gl_leak_result_free(&leaks);
    gl_tool_unmap(blocks, snap_bytes);
}
