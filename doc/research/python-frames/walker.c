/* Header-free CPython 3.9-3.13 frame walker (x86-64 Linux). Research prototype. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void *(*getts_fn)(void);
static getts_fn p_gilstate_this;      /* PyGILState_GetThisThreadState */
static getts_fn p_unchecked;          /* _PyThreadState_UncheckedGet / PyThreadState_GetUnchecked */
static int (*p_addr2line)(void *, int);
static const char *(*p_asutf8)(void *);
static void *p_code_type;
static int minor = -1;
static unsigned long hexver;

struct offs {
  int ts_frame;      /* 3.9/3.10: tstate->frame, 3.13: tstate->current_frame */
  int ts_cframe;     /* 3.11/3.12: tstate->cframe, -1 otherwise */
  int cf_current;    /* _PyCFrame.current_frame */
  int f_code, f_prev, f_instr; /* f_instr: f_lasti (int) or prev_instr/instr_ptr (ptr) */
  int f_owner, f_is_entry;
  int co_adaptive, co_filename, co_name, co_qualname, co_firsttraceable;
};
static struct offs O;

int gw_init(void) {
  p_gilstate_this = (getts_fn)dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
  p_unchecked = (getts_fn)dlsym(RTLD_DEFAULT, "PyThreadState_GetUnchecked");
  if (!p_unchecked) p_unchecked = (getts_fn)dlsym(RTLD_DEFAULT, "_PyThreadState_UncheckedGet");
  p_addr2line = (int (*)(void *, int))dlsym(RTLD_DEFAULT, "PyCode_Addr2Line");
  p_asutf8 = (const char *(*)(void *))dlsym(RTLD_DEFAULT, "PyUnicode_AsUTF8");
  p_code_type = dlsym(RTLD_DEFAULT, "PyCode_Type");
  const unsigned long *pv = (const unsigned long *)dlsym(RTLD_DEFAULT, "Py_Version");
  if (pv) { hexver = *pv; minor = (hexver >> 16) & 0xff; }
  else {
    const char *(*gv)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
    if (!gv) return -1;
    int maj = 0, mi = 0; sscanf(gv(), "%d.%d", &maj, &mi);
    if (maj != 3) return -1;
    minor = mi; hexver = (3ul << 24) | ((unsigned long)mi << 16);
  }
  memset(&O, -1, sizeof O);
  switch (minor) {
  case 9:  O = (struct offs){24,-1,-1, 32,24,104, -1,-1, -1,104,112,-1,-1}; break;
  case 10: O = (struct offs){24,-1,-1, 32,24,96,  -1,-1, -1,104,112,-1,-1}; break;
  case 11: O = (struct offs){-1,56,8,  32,48,56,  69,68, 184,112,120,128,168}; break;
  case 12: O = (struct offs){-1,56,0,  0,8,56,    70,-1, 192,112,120,128,176}; break;
  case 13: O = (struct offs){72,-1,-1, 0,8,56,    70,-1, 200,112,120,128,184}; break;
  default: return -1;
  }
  return minor;
}

#define LD(p, off, T) (*(T *)((char *)(p) + (off)))

/* which: 0 = PyGILState_GetThisThreadState, 1 = "unchecked" current tstate */
static inline int capture(void **codes, int *addrs, int max, int which, int *nskipped) {
  void *ts = which == 0 ? p_gilstate_this() : p_unchecked();
  if (!ts) return -1;
  void *f;
  if (O.ts_cframe >= 0) {
    void *cf = LD(ts, O.ts_cframe, void *);
    if (!cf) return 0;
    f = LD(cf, O.cf_current, void *);
  } else f = LD(ts, O.ts_frame, void *);
  int n = 0, sk = 0;
  for (; f && n < max; f = LD(f, O.f_prev, void *)) {
    void *co = LD(f, O.f_code, void *);
    if (minor >= 12 && LD(f, O.f_owner, char) == 3) { sk++; continue; } /* FRAME_OWNED_BY_CSTACK shim */
    if (!co || LD(co, 8, void *) != p_code_type) { sk++; continue; }
    int addr;
    if (minor == 9) addr = LD(f, O.f_instr, int);
    else if (minor == 10) addr = LD(f, O.f_instr, int) * 2;
    else addr = (int)(LD(f, O.f_instr, char *) - ((char *)co + O.co_adaptive));
    /* _PyFrame_IsIncomplete (3.11+): not yet past RESUME, e.g. 3.13 _Py_InitCleanup shim */
    if (minor >= 11 && LD(f, O.f_owner, char) != 1 /*GENERATOR*/ &&
        addr < 2 * LD(co, O.co_firsttraceable, int)) { sk++; continue; }
    codes[n] = co; addrs[n] = addr; n++;
  }
  if (nskipped) *nskipped = sk;
  return n;
}

#define MAXF 256
static void *g_codes[MAXF]; static int g_addrs[MAXF]; static int g_n, g_skipped;

int gw_capture(int which) { g_n = capture(g_codes, g_addrs, MAXF, which, &g_skipped); return g_n; }
int gw_skipped(void) { return g_skipped; }

/* direct read of compact-ASCII str without the API (3.9-3.13) */
static const char *ascii_ptr(void *s) {
  unsigned st = LD(s, 32, unsigned);
  int compact = (st >> 5) & 1, ascii = (st >> 6) & 1;
  if (!(compact && ascii)) return NULL;
  return (char *)s + (minor >= 12 ? 40 : 48);
}

/* resolve frame i (call with the GIL held, i.e. through ctypes.PyDLL) */
int gw_resolve(int i, char *buf, int len) {
  if (i >= g_n) return -1;
  void *co = g_codes[i];
  int line = p_addr2line(co, g_addrs[i]);
  void *fn = LD(co, O.co_filename, void *);
  void *nm = LD(co, O.co_qualname >= 0 ? O.co_qualname : O.co_name, void *);
  void *nm0 = LD(co, O.co_name, void *);
  const char *a = ascii_ptr(fn), *b = ascii_ptr(nm0);
  snprintf(buf, len, "%s|%s|%d|%s|direct=%s,%s|addr=%d", p_asutf8(fn), p_asutf8(nm0), line, p_asutf8(nm),
           a ? (strcmp(a, p_asutf8(fn)) == 0 ? "ok" : "MISMATCH") : "nonascii",
           b ? (strcmp(b, p_asutf8(nm0)) == 0 ? "ok" : "MISMATCH") : "nonascii", g_addrs[i]);
  return line;
}

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
/* benchmark: ns per capture (GIL released if called via CDLL) */
double gw_bench(int iters) {
  void *c[64]; int a[64]; volatile int s = 0;
  double t0 = now();
  for (int i = 0; i < iters; i++) s += capture(c, a, 64, 0, NULL);
  return (now() - t0) / iters;
}
double gw_bench_tstate(int iters) {
  volatile uintptr_t s = 0; double t0 = now();
  for (int i = 0; i < iters; i++) s += (uintptr_t)p_gilstate_this();
  return (now() - t0) / iters;
}
/* cost of PyCode_Addr2Line over the captured stack (no GIL: pure function on live code) */
double gw_bench_addr2line(int iters) {
  volatile int s = 0; double t0 = now();
  for (int i = 0; i < iters; i++) for (int j = 0; j < g_n; j++) s += p_addr2line(g_codes[j], g_addrs[j]);
  return (now() - t0) / iters;
}
unsigned long gw_hexver(void) { return hexver; }

/* ---- prototype: intern code objects on first sight (validated cache) ---- */
struct centry { void *co, *fn, *nm, *lt; int first; int id; };
#define CT_SIZE 8192
static struct centry ctab[CT_SIZE];
static int next_id = 1, misses;
static int off_first(void) { return minor >= 12 ? 68 : (minor == 11 ? 72 : 40); }
static int off_lt(void) { return minor >= 11 ? 136 : 120; }
static inline int intern_code(void *co) {
  void *fn = LD(co, O.co_filename, void *), *nm = LD(co, O.co_name, void *), *lt = LD(co, off_lt(), void *);
  int first = LD(co, off_first(), int);
  size_t h = ((uintptr_t)co >> 4) * 0x9E3779B97F4A7C15ull >> 51; /* 13 bits */
  for (;; h = (h + 1) & (CT_SIZE - 1)) {
    struct centry *e = &ctab[h];
    if (e->co == co) {
      if (e->fn == fn && e->nm == nm && e->lt == lt && e->first == first) return e->id;
      /* stale: address reused by a different code object -> re-intern in place */
      e->fn = fn; e->nm = nm; e->lt = lt; e->first = first; e->id = next_id++; misses++; return e->id;
    }
    if (!e->co) { /* miss: here gpuleak would copy strings + linetable */
      e->co = co; e->fn = fn; e->nm = nm; e->lt = lt; e->first = first; e->id = next_id++; misses++; return e->id;
    }
  }
}
double gw_bench_interned(int iters) {
  void *c[64]; int a[64]; volatile int s = 0;
  double t0 = now();
  for (int i = 0; i < iters; i++) { int n = capture(c, a, 64, 0, NULL); for (int j = 0; j < n; j++) s += intern_code(c[j]); }
  return (now() - t0) / iters;
}
int gw_misses(void) { return misses; }
/* debug: describe CSTACK shim frames (3.12+) */
int gw_shims(char *buf, int len) {
  void *ts = p_gilstate_this(); if (!ts) return -1;
  void *f = O.ts_cframe >= 0 ? LD(LD(ts, O.ts_cframe, void *), O.cf_current, void *) : LD(ts, O.ts_frame, void *);
  int k = 0; buf[0] = 0;
  for (; f; f = LD(f, O.f_prev, void *)) {
    if (LD(f, O.f_owner, char) != 3) continue;
    void *co = LD(f, O.f_code, void *);
    int iscode = co && LD(co, 8, void *) == p_code_type;
    k += snprintf(buf + k, len - k, "[shim exe_is_code=%d name=%s] ", iscode, iscode ? p_asutf8(LD(co, O.co_name, void *)) : "(not code)");
  }
  return k;
}
