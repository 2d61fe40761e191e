/* SPDX-License-Identifier: MIT */
#include "save/log_modules.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/tool.h"

static struct gl_log_module table[GL_LOG_MODULES_MAX];
static _Atomic unsigned published;

/* The GNU build-id among notes [p, end). */
static unsigned note_build_id(const uint8_t *p, const uint8_t *end,
                              uint8_t out[GL_LOG_BUILD_ID_MAX])
{
    while (p + sizeof(ElfW(Nhdr)) <= end) {
        ElfW(Nhdr) nh;
        memcpy(&nh, p, sizeof nh);
        const uint8_t *name = p + sizeof nh;
        const uint8_t *desc = name + ((nh.n_namesz + 3) & ~3u);
        const uint8_t *next = desc + ((nh.n_descsz + 3) & ~3u);
        if (next > end || next <= p)
            return 0;
        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
            nh.n_descsz > 0 && nh.n_descsz <= GL_LOG_BUILD_ID_MAX) {
            memcpy(out, desc, nh.n_descsz);
            return nh.n_descsz;
        }
        p = next;
    }
    return 0;
}

struct scan {
    void (*emit)(unsigned index, const struct gl_log_module *m);
    unsigned added;
    char exe[PATH_MAX];
};

static bool known(uintptr_t bias, uintptr_t start, const char *path)
{
    unsigned n = atomic_load_explicit(&published, memory_order_acquire);
    for (unsigned i = 0; i < n; i++)
        if (table[i].bias == bias && table[i].start == start && strcmp(table[i].path, path) == 0)
            return true;
    return false;
}

static int scan_one(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct scan *s = arg;
    const char *path = info->dlpi_name;
    if (!path || !*path)
        path = s->exe; /* the program itself */
    if (path[0] != '/')
        return 0; /* the vDSO: no file to read later */
    /* The file itself, as the process's maps name it (libcuda.so.1 is a
     * link to libcuda.so.580...): what a report of the live process says. */
    char real[PATH_MAX];
    if (realpath(path, real))
        path = real;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    const ElfW(Phdr) *note = NULL;
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD) {
            uintptr_t a = info->dlpi_addr + ph->p_vaddr;
            if (a < lo)
                lo = a;
            if (a + ph->p_memsz > hi)
                hi = a + ph->p_memsz;
        } else if (ph->p_type == PT_NOTE && !note) {
            note = ph;
        }
    }
    unsigned n = atomic_load_explicit(&published, memory_order_relaxed);
    if (lo >= hi || n >= GL_LOG_MODULES_MAX || known(info->dlpi_addr, lo, path))
        return 0;
    struct gl_log_module *m = &table[n];
    size_t len = strlen(path);
    char *copy = gl_tool_alloc(len + 1);
    if (!copy)
        return 1;
    memcpy(copy, path, len + 1);
    *m = (struct gl_log_module){.bias = info->dlpi_addr, .start = lo, .end = hi, .path = copy};
    for (unsigned i = 0; i < info->dlpi_phnum && !m->build_id_len; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_NOTE) {
            const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
            m->build_id_len = note_build_id(p, p + ph->p_memsz, m->build_id);
        }
    }
    atomic_store_explicit(&published, n + 1, memory_order_release);
    if (s->emit)
        s->emit(n, m);
    s->added++;
    return 0;
}

unsigned gl_log_modules_scan(void (*emit)(unsigned index, const struct gl_log_module *m))
{
    struct scan s = {.emit = emit};
    ssize_t n = readlink("/proc/self/exe", s.exe, sizeof s.exe - 1);
    s.exe[n > 0 ? n : 0] = '\0';
    dl_iterate_phdr(scan_one, &s);
    return s.added;
}

int gl_log_modules_find(uintptr_t ip, uint64_t *offset)
{
    unsigned n = atomic_load_explicit(&published, memory_order_acquire);
    for (unsigned i = n; i-- > 0;)
        if (table[i].start <= ip && ip < table[i].end) {
            *offset = ip - table[i].bias;
            return (int)i;
        }
    return -1;
}

void gl_log_modules_reset(void) { atomic_store(&published, 0); }

unsigned gl_log_modules_file_build_id(const char *path, uint8_t out[GL_LOG_BUILD_ID_MAX])
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    unsigned found = 0;
    ElfW(Ehdr) eh;
    if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh &&
        memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
        eh.e_phentsize == sizeof(ElfW(Phdr)) && eh.e_phnum < 256) {
        for (unsigned i = 0; i < eh.e_phnum && !found; i++) {
            ElfW(Phdr) ph;
            if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) !=
                (ssize_t)sizeof ph)
                break;
            if (ph.p_type != PT_NOTE || ph.p_filesz == 0 || ph.p_filesz > 65536)
                continue;
            uint8_t buf[65536];
            if (pread(fd, buf, ph.p_filesz, (off_t)ph.p_offset) == (ssize_t)ph.p_filesz)
                found = note_build_id(buf, buf + ph.p_filesz, out);
        }
    }
    close(fd);
    return found;
}
