// hostcache.c keeps the large host blocks a CPU PJRT plugin allocates for its
// buffers, so that they are reused instead of being returned to the kernel.
//
// The XLA CPU plugin allocates every output buffer and, per execution, one
// temporary arena through posix_memalign/aligned_alloc. Blocks over 32 MiB
// (and any block from a thread's malloc arena that cannot grow) are mmap'd
// fresh and munmap'd on free, so each execution faults in and zeroes every page
// of its temporaries again: a few hundred MiB per training step. The cache
// rebinds the plugin's own imports of posix_memalign, aligned_alloc, realloc
// and free (its GOT slots, found from its dynamic section) to functions that
// serve blocks of at least TT_HC_MIN bytes (32 MiB) from free lists of mmap'd blocks in
// size classes of 1/8 of a power of two, and pass everything else to the C
// library. Only the plugin's calls are affected; free blocks beyond the cap
// go back to the kernel, and tt_hostcache_release returns them all.
#define _GNU_SOURCE
#include "capi.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

// Blocks below 32 MiB (glibc's largest mmap threshold) are left to the C
// library: it serves them from its heaps once their size has been freed
// before, and its reuse of the most recently freed memory keeps them warm in
// the CPU caches, which a cache keyed by size class does not match.
#define TT_HC_MIN ((size_t)32 << 20)

typedef struct {
  void* p;
  size_t size;  // the block's class size (its mmap length)
} tt_block;

static pthread_mutex_t hc_mu = PTHREAD_MUTEX_INITIALIZER;
static tt_block* hc_live;  // blocks handed out (unordered)
static size_t hc_nlive, hc_caplive;
static tt_block* hc_free;  // blocks kept for reuse, most recent last
static size_t hc_nfree, hc_capfree;
static size_t hc_free_bytes, hc_live_bytes, hc_limit;
static uint64_t hc_hits, hc_misses;
static uintptr_t hc_page = 4096;  // the page size, set at install

// hc_class rounds n up to its size class: a multiple of 1/8 of the largest
// power of two not above n, and of the page size.
static size_t hc_class(size_t n) {
  size_t top = (size_t)1 << (63 - __builtin_clzl(n));
  size_t step = top >> 3;
  if (step < hc_page) step = hc_page;
  return (n + step - 1) / step * step;
}

static int hc_push(tt_block** arr, size_t* n, size_t* cap, tt_block b) {
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 64;
    tt_block* a = (tt_block*)realloc(*arr, c * sizeof(tt_block));
    if (a == NULL) return -1;
    *arr = a;
    *cap = c;
  }
  (*arr)[(*n)++] = b;
  return 0;
}

// hc_get returns a block of at least n bytes aligned to the page, or NULL.
static void* hc_get(size_t n) {
  size_t size = hc_class(n);
  void* p = NULL;
  pthread_mutex_lock(&hc_mu);
  for (size_t i = hc_nfree; i-- > 0;) {
    if (hc_free[i].size == size) {
      p = hc_free[i].p;
      hc_free[i] = hc_free[--hc_nfree];
      hc_free_bytes -= size;
      hc_hits++;
      break;
    }
  }
  pthread_mutex_unlock(&hc_mu);
  if (p == NULL) {
    p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    pthread_mutex_lock(&hc_mu);
    hc_misses++;
    pthread_mutex_unlock(&hc_mu);
  }
  pthread_mutex_lock(&hc_mu);
  int bad = hc_push(&hc_live, &hc_nlive, &hc_caplive, (tt_block){p, size});
  if (!bad) hc_live_bytes += size;
  pthread_mutex_unlock(&hc_mu);
  if (bad) {
    munmap(p, size);
    return NULL;
  }
  return p;
}

// hc_take removes p from the live blocks and returns its size, or 0 when the
// cache did not hand p out. The caller holds hc_mu.
static size_t hc_take(void* p) {
  for (size_t i = 0; i < hc_nlive; i++) {
    if (hc_live[i].p == p) {
      size_t size = hc_live[i].size;
      hc_live[i] = hc_live[--hc_nlive];
      hc_live_bytes -= size;
      return size;
    }
  }
  return 0;
}

// hc_put keeps a taken block for reuse, or unmaps it past the cap.
static void hc_put(void* p, size_t size) {
  pthread_mutex_lock(&hc_mu);
  int keep = hc_free_bytes + size <= hc_limit &&
             hc_push(&hc_free, &hc_nfree, &hc_capfree, (tt_block){p, size}) == 0;
  if (keep) hc_free_bytes += size;
  pthread_mutex_unlock(&hc_mu);
  if (!keep) munmap(p, size);
}

static int hc_posix_memalign(void** out, size_t align, size_t n) {
  if (n >= TT_HC_MIN && align <= hc_page) {
    void* p = hc_get(n);
    if (p != NULL) {
      *out = p;
      return 0;
    }
  }
  return posix_memalign(out, align, n);
}

static void* hc_aligned_alloc(size_t align, size_t n) {
  if (n >= TT_HC_MIN && align <= hc_page) {
    void* p = hc_get(n);
    if (p != NULL) return p;
  }
  return aligned_alloc(align, n);
}

// hc_mine reports whether p could be a cache block: they are page-aligned,
// the C library's small blocks never are.
static int hc_mine(void* p) { return p != NULL && ((uintptr_t)p & (hc_page - 1)) == 0; }

static void hc_free_fn(void* p) {
  if (!hc_mine(p)) {
    free(p);
    return;
  }
  pthread_mutex_lock(&hc_mu);
  size_t size = hc_take(p);
  pthread_mutex_unlock(&hc_mu);
  if (size) {
    hc_put(p, size);
    return;
  }
  free(p);
}

static void* hc_realloc(void* p, size_t n) {
  if (!hc_mine(p)) return realloc(p, n);
  pthread_mutex_lock(&hc_mu);
  size_t size = hc_take(p);
  pthread_mutex_unlock(&hc_mu);
  if (!size) return realloc(p, n);
  void* q = malloc(n ? n : 1);
  if (q == NULL) {  // p stays valid, as realloc's contract says
    pthread_mutex_lock(&hc_mu);
    if (hc_push(&hc_live, &hc_nlive, &hc_caplive, (tt_block){p, size}) == 0) hc_live_bytes += size;
    pthread_mutex_unlock(&hc_mu);
    return NULL;
  }
  memcpy(q, p, n < size ? n : size);
  hc_put(p, size);
  return q;
}

static void hc_lock(void) { pthread_mutex_lock(&hc_mu); }
static void hc_unlock(void) { pthread_mutex_unlock(&hc_mu); }

typedef struct {
  ElfW(Addr) base;
  ElfW(Addr) relro_start, relro_end;
} hc_object;

static int hc_find_relro(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  hc_object* o = (hc_object*)data;
  if (info->dlpi_addr != o->base) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
      o->relro_start = o->base + info->dlpi_phdr[i].p_vaddr;
      o->relro_end = o->relro_start + info->dlpi_phdr[i].p_memsz;
    }
  }
  return 1;
}

// hc_patch points every relocation slot of the object that imports name at fn,
// and returns how many slots it wrote (-1 when a page cannot be made writable).
static int hc_patch(const hc_object* o, const ElfW(Rela) * rel, size_t n, const ElfW(Sym) * syms,
                    const char* strtab, const char* name, void* fn) {
  long page = sysconf(_SC_PAGESIZE);
  int count = 0;
  for (size_t i = 0; i < n; i++) {
    size_t s = ELF64_R_SYM(rel[i].r_info);
    if (s == 0 || rel[i].r_addend != 0 || strcmp(strtab + syms[s].st_name, name) != 0) continue;
    ElfW(Addr) slot = o->base + rel[i].r_offset;
    void* start = (void*)(slot & ~(ElfW(Addr))(page - 1));
    int relro = slot >= o->relro_start && slot < o->relro_end;
    if (relro && mprotect(start, (size_t)page, PROT_READ | PROT_WRITE) != 0) return -1;
    __atomic_store_n((void**)slot, fn, __ATOMIC_SEQ_CST);
    if (relro) mprotect(start, (size_t)page, PROT_READ);
    count++;
  }
  return count;
}

int tt_hostcache_install(void* handle, size_t limit) {
  struct link_map* lm = NULL;
  if (handle == NULL || dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || lm == NULL) return -1;
  hc_object o = {lm->l_addr, 0, 0};
  dl_iterate_phdr(hc_find_relro, &o);
  const ElfW(Sym)* syms = NULL;
  const char* strtab = NULL;
  const ElfW(Rela)* jmprel = NULL;
  const ElfW(Rela)* rela = NULL;
  size_t njmp = 0, nrela = 0;
  int pltrel_rela = 1;
  for (ElfW(Dyn)* d = lm->l_ld; d->d_tag != DT_NULL; d++) {
    // The loader has already made the address entries absolute on this
    // platform; a value below the base is still relative.
    ElfW(Addr) v = d->d_un.d_ptr;
    ElfW(Addr) a = v < o.base ? v + o.base : v;
    switch (d->d_tag) {
      case DT_SYMTAB: syms = (const ElfW(Sym)*)a; break;
      case DT_STRTAB: strtab = (const char*)a; break;
      case DT_JMPREL: jmprel = (const ElfW(Rela)*)a; break;
      case DT_PLTRELSZ: njmp = d->d_un.d_val / sizeof(ElfW(Rela)); break;
      case DT_RELA: rela = (const ElfW(Rela)*)a; break;
      case DT_RELASZ: nrela = d->d_un.d_val / sizeof(ElfW(Rela)); break;
      case DT_PLTREL: pltrel_rela = d->d_un.d_val == DT_RELA; break;
    }
  }
  if (syms == NULL || strtab == NULL || !pltrel_rela) return -1;
  pthread_mutex_lock(&hc_mu);
  hc_limit = limit;
  hc_page = (uintptr_t)sysconf(_SC_PAGESIZE);
  pthread_mutex_unlock(&hc_mu);
  static int atfork_done;
  if (!__atomic_exchange_n(&atfork_done, 1, __ATOMIC_SEQ_CST)) pthread_atfork(hc_lock, hc_unlock, hc_unlock);
  struct {
    const char* name;
    void* fn;
  } hooks[] = {{"posix_memalign", (void*)hc_posix_memalign},
               {"aligned_alloc", (void*)hc_aligned_alloc},
               {"realloc", (void*)hc_realloc},
               {"free", (void*)hc_free_fn}};
  int total = 0;
  for (size_t h = 0; h < sizeof(hooks) / sizeof(hooks[0]); h++) {
    int a = jmprel ? hc_patch(&o, jmprel, njmp, syms, strtab, hooks[h].name, hooks[h].fn) : 0;
    int b = rela ? hc_patch(&o, rela, nrela, syms, strtab, hooks[h].name, hooks[h].fn) : 0;
    if (a < 0 || b < 0) return -1;
    total += a + b;
  }
  return total;
}

void tt_hostcache_release(void) {
  pthread_mutex_lock(&hc_mu);
  tt_block* blocks = hc_free;
  size_t n = hc_nfree;
  hc_free = NULL;
  hc_nfree = hc_capfree = 0;
  hc_free_bytes = 0;
  pthread_mutex_unlock(&hc_mu);
  for (size_t i = 0; i < n; i++) munmap(blocks[i].p, blocks[i].size);
  free(blocks);
}

void tt_hostcache_stats(uint64_t* free_bytes, uint64_t* live_bytes, uint64_t* hits, uint64_t* misses) {
  pthread_mutex_lock(&hc_mu);
  *free_bytes = hc_free_bytes;
  *live_bytes = hc_live_bytes;
  *hits = hc_hits;
  *misses = hc_misses;
  pthread_mutex_unlock(&hc_mu);
}

// tt_hostheap_hold fixes the C library's heap thresholds at the values its
// dynamic rule reaches once a 32 MiB block has been freed: blocks under
// 32 MiB come from the heaps, and a heap returns free memory to the kernel
// only past 64 MiB at its top. With the dynamic rule, whether a block of a
// few MiB (a buffer the plugin fills, a CPU tensor a copy lands in) was
// mapped fresh, or trimmed away after its free, depended on how a process's
// heaps happened to be laid out, so some processes faulted in every such
// block on every step and others none. The settings cover the whole process.
// A user who set the C library's malloc tunables keeps them: then nothing is
// changed and the result is 0.
int tt_hostheap_hold(void) {
  const char* t = getenv("GLIBC_TUNABLES");
  if ((t != NULL && strstr(t, "glibc.malloc.") != NULL) || getenv("MALLOC_TRIM_THRESHOLD_") != NULL ||
      getenv("MALLOC_MMAP_THRESHOLD_") != NULL || getenv("MALLOC_TOP_PAD_") != NULL)
    return 0;
  return mallopt(M_MMAP_THRESHOLD, (int)TT_HC_MIN) && mallopt(M_TRIM_THRESHOLD, (int)(2 * TT_HC_MIN));
}
