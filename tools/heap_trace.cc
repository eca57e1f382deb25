// SPDX-License-Identifier: Apache-2.0
// heap_trace.so: what a process allocates and never frees, with the call
// stack of each allocation (glibc's mtrace gives only malloc's immediate
// caller, which for C++ is operator new). Preloaded; it interposes
// mtrace() and muntrace(), so a program that marks the span it wants
// profiled with them (bench/soak) needs no other change:
//
//   HEAP_TRACE_OUT=/tmp/heap.txt LD_PRELOAD=heap_trace.so bench/soak --calls 300000
//
// Between mtrace() and muntrace() every malloc, calloc, realloc,
// aligned allocation and free is tracked; at muntrace() the blocks still
// live are grouped by their stack and the groups written, largest first,
// each frame as FILE(SYMBOL+OFF) and its offset in FILE (for addr2line -e
// FILE OFFSET; for a binary that is not position-independent, the address
// in brackets). Not thread-hostile but not fast: a profiling tool only.
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);
}

namespace {

constexpr int kFrames = 14;
constexpr size_t kSlots = size_t{1} << 21;  // live blocks tracked at most

struct Entry {
  void* ptr;  // nullptr: empty; kTombstone: removed
  size_t size;
  void* stack[kFrames];
  int depth;
};

void* const kTombstone = reinterpret_cast<void*>(1);
Entry* g_table = nullptr;
bool g_on = false;
pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
thread_local bool t_inside = false;

size_t Hash(void* p) { return (reinterpret_cast<uintptr_t>(p) >> 4) * 0x9E3779B97F4A7C15ull >> 43; }

void Add(void* p, size_t size) {
  if (p == nullptr || !g_on || t_inside) return;
  t_inside = true;
  Entry e{p, size, {}, 0};
  e.depth = backtrace(e.stack, kFrames);
  pthread_mutex_lock(&g_mu);
  for (size_t i = Hash(p) % kSlots, n = 0; n < kSlots; i = (i + 1) % kSlots, ++n) {
    if (g_table[i].ptr == nullptr || g_table[i].ptr == kTombstone) {
      g_table[i] = e;
      break;
    }
  }
  pthread_mutex_unlock(&g_mu);
  t_inside = false;
}

void Remove(void* p) {
  if (p == nullptr || g_table == nullptr) return;
  pthread_mutex_lock(&g_mu);
  for (size_t i = Hash(p) % kSlots, n = 0; n < kSlots && g_table[i].ptr != nullptr; i = (i + 1) % kSlots, ++n) {
    if (g_table[i].ptr == p) {
      g_table[i].ptr = kTombstone;
      break;
    }
  }
  pthread_mutex_unlock(&g_mu);
}

bool SameStack(const Entry& a, const Entry& b) {
  return a.depth == b.depth && std::memcmp(a.stack, b.stack, sizeof(void*) * a.depth) == 0;
}

void PrintFrame(FILE* out, void* pc) {
  Dl_info info{};
  if (dladdr(pc, &info) == 0 || info.dli_fname == nullptr) {
    std::fprintf(out, "      %p\n", pc);
    return;
  }
  const uintptr_t off = reinterpret_cast<uintptr_t>(pc) - reinterpret_cast<uintptr_t>(info.dli_fbase);
  if (info.dli_sname != nullptr) {
    std::fprintf(out, "      %s(%s+%#lx) +%#lx [%p]\n", info.dli_fname, info.dli_sname,
                 static_cast<unsigned long>(reinterpret_cast<uintptr_t>(pc) - reinterpret_cast<uintptr_t>(info.dli_saddr)),
                 static_cast<unsigned long>(off), pc);
  } else {
    std::fprintf(out, "      %s +%#lx [%p]\n", info.dli_fname, static_cast<unsigned long>(off), pc);
  }
}

// Live blocks grouped by stack, largest groups first.
void Dump() {
  t_inside = true;
  const char* path = std::getenv("HEAP_TRACE_OUT");
  FILE* out = path != nullptr ? std::fopen(path, "w") : stderr;
  if (out == nullptr) out = stderr;
  struct Group {
    size_t first, blocks, bytes;
  };
  static Group groups[4096];
  size_t ngroups = 0, blocks = 0, bytes = 0;
  pthread_mutex_lock(&g_mu);
  for (size_t i = 0; i < kSlots; ++i) {
    const Entry& e = g_table[i];
    if (e.ptr == nullptr || e.ptr == kTombstone) continue;
    ++blocks;
    bytes += e.size;
    size_t g = 0;
    while (g < ngroups && !SameStack(g_table[groups[g].first], e)) ++g;
    if (g == ngroups && ngroups < 4096) groups[ngroups++] = Group{i, 0, 0};
    if (g < ngroups) {
      ++groups[g].blocks;
      groups[g].bytes += e.size;
    }
  }
  std::sort(groups, groups + ngroups, [](const Group& a, const Group& b) { return a.bytes > b.bytes; });
  std::fprintf(out, "heap_trace: %zu bytes in %zu blocks allocated and never freed, %zu stacks\n", bytes, blocks,
               ngroups);
  for (size_t g = 0; g < ngroups && g < 40; ++g) {
    std::fprintf(out, "  %zu bytes in %zu blocks from\n", groups[g].bytes, groups[g].blocks);
    const Entry& e = g_table[groups[g].first];
    for (int f = 1; f < e.depth; ++f) PrintFrame(out, e.stack[f]);  // frame 0 is Add
  }
  pthread_mutex_unlock(&g_mu);
  if (out != stderr) std::fclose(out);
  t_inside = false;
}

}  // namespace

extern "C" {

void mtrace() {
  if (g_table == nullptr) {
    void* m = mmap(nullptr, kSlots * sizeof(Entry), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return;
    g_table = static_cast<Entry*>(m);
    void* warm[2];
    t_inside = true;
    backtrace(warm, 2);  // loads the unwinder now, whose own allocations are not the program's
    t_inside = false;
  }
  g_on = true;
}

void muntrace() {
  if (!g_on) return;
  g_on = false;
  Dump();
}

void* malloc(size_t n) {
  void* p = __libc_malloc(n);
  Add(p, n);
  return p;
}

void* calloc(size_t a, size_t b) {
  void* p = __libc_calloc(a, b);
  Add(p, a * b);
  return p;
}

void* realloc(void* old, size_t n) {
  Remove(old);
  void* p = __libc_realloc(old, n);
  Add(p, n);
  return p;
}

void* memalign(size_t align, size_t n) {
  void* p = __libc_memalign(align, n);
  Add(p, n);
  return p;
}

void* aligned_alloc(size_t align, size_t n) { return memalign(align, n); }

int posix_memalign(void** out, size_t align, size_t n) {
  void* p = memalign(align, n);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}

void free(void* p) {
  Remove(p);
  __libc_free(p);
}

}  // extern "C"
