/* hostile.c — a signed plugin that attacks its host
   (tests/host/dispatch/sandbox_dispatch_test.cpp). What it does and when:
     - while handling a delivery: the attack named by the request body's "attack" field, with its
       "arg" (a path or a pid), e.g. {"attack":"open","arg":"/etc/passwd"};
     - in a constructor (built with -DHOSTILE_CTOR=\"NAME\") or in init (-DHOSTILE_INIT=\"NAME\"):
       that attack, with -DHOSTILE_ARG=\"ARG\"; what it got is answered to a later "none".
   An attack that returns answers 200 {"attack":NAME,"result":"denied: <errno>"|"succeeded"};
   an attack the sandbox kills never answers. */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

static char g_load_result[256] = "none";

/* raw_frame writes one frame of the worker protocol straight to the worker's channel (fd 3), as
   code in the worker can: the host must treat it as the plugin's word. */
static void put32(char *p, uint32_t v) { memcpy(p, &v, 4); }
/* erp_call_payload writes a kErpCall payload at |p| — POST |path| with a body of |body_len| bytes
   of |fill| — and returns its length. */
static size_t erp_call_payload(char *p, const char *path, uint32_t body_len, char fill) {
  const size_t plen = strlen(path);
  put32(p, 4);
  memcpy(p + 4, "POST", 4);
  put32(p + 8, (uint32_t)plen);
  memcpy(p + 12, path, plen);
  put32(p + 12 + plen, body_len);
  memset(p + 16 + plen, fill, body_len);
  return 16 + plen + body_len;
}
static int raw_frame(uint16_t type, uint64_t id, const char *payload, uint32_t len) {
  char h[16];
  put32(h, len);
  put32(h + 4, type);
  put32(h + 8, (uint32_t)id);
  put32(h + 12, (uint32_t)(id >> 32));
  if (write(3, h, 16) != 16) return -1;
  for (uint32_t off = 0; off < len;) {
    ssize_t w = write(3, payload + off, len - off);
    if (w <= 0) return -1;
    off += (uint32_t)w;
  }
  return 0;
}

static void result_of(int ok, char *out, size_t n) {
  if (ok)
    snprintf(out, n, "succeeded");
  else
    snprintf(out, n, "denied: %s", strerror(errno));
}

/* fill_sessions makes delivery *arg's ERP call, then sends each of deliveries 1..*arg a 15 MiB
   kRespond frame and 14 kErpCall frames of 1 MiB (each what an honest worker may send, together
   below what the host holds for one delivery), from static buffers (the worker's own memory limit
   does not bound what the host buffers). */
static void *fill_sessions(void *arg) {
  static char frame[(15u << 20) + 64];
  static char call[(1u << 20) + 64];
  const int sessions = *(int *)arg;
  const uint32_t body = 15u << 20;
  size_t k = 0;
  put32(frame + k, 200);
  put32(frame + k + 4, 10);
  memcpy(frame + k + 8, "text/plain", 10);
  k += 18;
  put32(frame + k, body);
  memset(frame + k + 4, 'A', body);
  k += 4 + body;
  const size_t c = erp_call_payload(call, "/orders/1/fulfil", (1u << 20) - 64, '{');
  /* The last delivery's ERP call is this thread's too (its handler only sleeps): no frame of the
     worker's own can land inside these. */
  static char own[64];
  const size_t o = erp_call_payload(own, "/orders/1/fulfil", 0, 0);
  raw_frame(18, (uint64_t)sessions, own, (uint32_t)o);
  for (int id = 1; id <= sessions; ++id) {
    raw_frame(19, (uint64_t)id, frame, (uint32_t)k);
    for (int i = 0; i < 14; ++i) raw_frame(18, (uint64_t)id, call, (uint32_t)c);
  }
  return NULL;
}

static void *sleep_forever(void *arg) {
  (void)arg;
  for (;;) sleep(1000);
  return NULL;
}

/* patch_main_got points every GOT slot of the worker executable that names |symbol| at
   |replacement|: code in the worker can rewrite the worker's own data (RELRO is only a page
   protection, and mprotect to read-write is allowed). Returns how many slots it patched. */
struct got_patch {
  const char *symbol;
  void *replacement;
  int patched;
};
static void patch_table(struct got_patch *g, ElfW(Addr) base, const ElfW(Rela) * rela, size_t size,
                        const ElfW(Sym) * symtab, const char *strtab) {
  const long page = sysconf(_SC_PAGESIZE);
  for (size_t i = 0; i < size / sizeof(ElfW(Rela)); ++i) {
    const ElfW(Sym) *sym = &symtab[ELF64_R_SYM(rela[i].r_info)];
    if (strcmp(strtab + sym->st_name, g->symbol) != 0) continue;
    void **slot = (void **)(base + rela[i].r_offset);
    void *start = (void *)((uintptr_t)slot & ~(uintptr_t)(page - 1));
    if (mprotect(start, (size_t)page, PROT_READ | PROT_WRITE) != 0) continue;
    *slot = g->replacement;
    ++g->patched;
  }
}
static int patch_main_object(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  struct got_patch *g = arg;
  const ElfW(Rela) *jmprel = NULL, *rela = NULL;
  size_t jmprel_size = 0, rela_size = 0;
  const ElfW(Sym) *symtab = NULL;
  const char *strtab = NULL;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type != PT_DYNAMIC) continue;
    for (const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
         d->d_tag != DT_NULL; ++d) {
      /* ld.so has made these pointers absolute. */
      if (d->d_tag == DT_JMPREL) jmprel = (const ElfW(Rela) *)d->d_un.d_ptr;
      if (d->d_tag == DT_PLTRELSZ) jmprel_size = d->d_un.d_val;
      if (d->d_tag == DT_RELA) rela = (const ElfW(Rela) *)d->d_un.d_ptr;
      if (d->d_tag == DT_RELASZ) rela_size = d->d_un.d_val;
      if (d->d_tag == DT_SYMTAB) symtab = (const ElfW(Sym) *)d->d_un.d_ptr;
      if (d->d_tag == DT_STRTAB) strtab = (const char *)d->d_un.d_ptr;
    }
  }
  if (symtab != NULL && strtab != NULL) {
    if (jmprel != NULL) patch_table(g, info->dlpi_addr, jmprel, jmprel_size, symtab, strtab);
    if (rela != NULL) patch_table(g, info->dlpi_addr, rela, rela_size, symtab, strtab);
  }
  return 1; /* the first object is the executable: stop */
}
static int patch_main_got(const char *symbol, void *replacement) {
  struct got_patch g = {symbol, replacement, 0};
  dl_iterate_phdr(patch_main_object, &g);
  return g.patched;
}
static ssize_t recv_never(int fd, void *buf, size_t n, int flags) {
  (void)fd, (void)buf, (void)n, (void)flags;
  for (;;) sleep(1000);
  return -1;
}

static void on_usr1(int sig) { (void)sig; }
static pid_t g_storm_target;
static void *signal_storm(void *arg) {
  (void)arg;
  for (;;) syscall(SYS_tgkill, getpid(), g_storm_target, SIGUSR1);
  return NULL;
}

static sigjmp_buf g_hidden_jump;
static void hidden_fault_caught(int sig) {
  (void)sig;
  siglongjmp(g_hidden_jump, 1);
}

/* bad_stack_socket calls socket(AF_INET, SOCK_STREAM, 0) with %rsp = 0x10, restoring %rsp after
   (if it ever returns). */
static void bad_stack_socket(void) {
  static long saved_rsp;
  __asm__ volatile(
      "mov %%rsp, %0\n\t"
      "mov $0x10, %%rsp\n\t"
      "mov $41, %%eax\n\t"
      "mov $2, %%edi\n\t"
      "mov $1, %%esi\n\t"
      "xor %%edx, %%edx\n\t"
      "syscall\n\t"
      "mov %0, %%rsp\n\t"
      : "+m"(saved_rsp)
      :
      : "rax", "rdi", "rsi", "rdx", "rcx", "r11", "memory");
}

/* attack runs |name| with |arg| and writes what happened to |out|. */
static void attack(const char *name, const char *arg, char *out, size_t n) {
  snprintf(out, n, "unknown attack");
  if (strcmp(name, "none") == 0) {
    snprintf(out, n, "%s", g_load_result);
  } else if (strcmp(name, "socket") == 0) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    result_of(fd >= 0, out, n);
    if (fd >= 0) {
      struct sockaddr_in a;
      memset(&a, 0, sizeof a);
      a.sin_family = AF_INET;
      a.sin_port = htons((uint16_t)atoi(arg));
      a.sin_addr.s_addr = htonl(0x7f000001);
      int c = connect(fd, (struct sockaddr *)&a, sizeof a);
      snprintf(out, n, c == 0 ? "succeeded: connected" : "socket ok, connect: %s", strerror(errno));
      close(fd);
    }
  } else if (strcmp(name, "open") == 0) {
    int fd = open(arg, O_RDONLY);
    result_of(fd >= 0, out, n);
    if (fd >= 0) close(fd);
  } else if (strcmp(name, "exec") == 0) {
    char *const argv[] = {(char *)"/bin/sh", (char *)"-c", (char *)"true", NULL};
    execve("/bin/sh", argv, NULL);
    result_of(0, out, n);
  } else if (strcmp(name, "fork") == 0) {
    pid_t p = fork();
    if (p == 0) _exit(0);
    if (p > 0) waitpid(p, NULL, 0);
    result_of(p > 0, out, n);
  } else if (strcmp(name, "ptrace") == 0) {
    long r = ptrace(PTRACE_ATTACH, (pid_t)atoi(arg), NULL, NULL);
    if (r == 0) ptrace(PTRACE_DETACH, (pid_t)atoi(arg), NULL, NULL);
    result_of(r == 0, out, n);
  } else if (strcmp(name, "rwx") == 0) {
    void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int ok = page != MAP_FAILED && mprotect(page, 4096, PROT_READ | PROT_WRITE | PROT_EXEC) == 0;
    if (ok) {
      ((unsigned char *)page)[0] = 0xc3; /* ret */
      ((void (*)(void))page)();
    }
    result_of(ok, out, n);
  } else if (strcmp(name, "memfd_write") == 0) {
    /* fd 4 is the library's memfd in a worker; in process, any descriptor of a memfd */
    ssize_t w = write(atoi(arg), "x", 1);
    result_of(w == 1, out, n);
  } else if (strcmp(name, "kill") == 0) {
    int r = kill((pid_t)atoi(arg), SIGCONT); /* harmless if it lands; the attempt is the point */
    result_of(r == 0, out, n);
  } else if (strcmp(name, "spin") == 0) {
    for (volatile unsigned long i = 0;; ++i) {
    }
  } else if (strcmp(name, "alloc") == 0) {
    char *p = malloc((size_t)10 << 30);
    result_of(p != NULL, out, n);
    free(p);
  } else if (strcmp(name, "page_tables_after") == 0) {
    /* 40,000 isolated pages (as page_tables) once the clock has passed |arg| (Unix seconds): in
       init, a worker that started before then loads, and a restart after then runs out of memory. */
    if (time(NULL) < atol(arg)) {
      snprintf(out, n, "not yet");
      return;
    }
    attack("page_tables", "40000", out, n);
  } else if (strcmp(name, "page_tables") == 0) {
    /* |arg| single read-only pages, each in a 1 GiB slot of its own, each read once: RLIMIT_AS
       counts 4 KiB for each, the kernel holds a page-table page and a page-directory page (8 KiB)
       for each. Only a memory cgroup counts those. */
    unsigned long want = strtoul(arg, NULL, 10), mapped = 0;
    volatile unsigned long sink = 0;
    for (unsigned long i = 0; i < want; ++i) {
      void *hint = (void *)(0x100000000000ul + i * (1ul << 30));
      void *p = mmap(hint, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) break;
      sink += *(volatile char *)p;
      ++mapped;
    }
    snprintf(out, n, "mapped %lu", mapped + (sink & 0));
  } else if (strcmp(name, "frame_flood") == 0) {
    /* An ERP call of delivery 1 (the first on this worker), then, while the host waits on the
       ERP, 64 more of 1 MiB each (the most an honest one carries) as fast as the channel takes
       them. */
    const uint32_t body = (1u << 20) - 64;
    char *p = malloc(body + 64);
    if (p == NULL) return;
    raw_frame(18, 1, p, (uint32_t)erp_call_payload(p, "/orders/1/fulfil", 0, 0));
    const size_t m = erp_call_payload(p, "/orders/1/fulfil", body, '{');
    for (int i = 0; i < 64; ++i) raw_frame(18, 1, p, (uint32_t)m);
    free(p);
    snprintf(out, n, "flooded");
  } else if (strcmp(name, "stall_reader") == 0) {
    /* The worker's main thread, which reads the channel, never reads again after its current
       read: its recv() now goes to a function that sleeps (the worker's GOT, rewritten). */
    if (patch_main_got("recv", (void *)recv_never) == 0)
      snprintf(out, n, "recv not found in the worker's GOT");
    else
      snprintf(out, n, "stalled");
  } else if (strcmp(name, "stalled_call_flood") == 0) {
    /* The worker's reader stalled (its recv() rewritten), then ERP calls of this delivery (id 1,
       the first on this worker) to a path no capability allows, 256 every 2 ms: each is refused
       and answered, and the answers the worker never reads pile up in the host. */
    if (patch_main_got("recv", (void *)recv_never) == 0) {
      snprintf(out, n, "recv not found in the worker's GOT");
      return;
    }
    char frame[64];
    const size_t m = 16 + erp_call_payload(frame + 16, "/denied", 0, 0);
    put32(frame, (uint32_t)(m - 16));
    put32(frame + 4, 18);
    put32(frame + 8, 1);
    put32(frame + 12, 0);
    static char burst[256 * 64];
    for (int i = 0; i < 256; ++i) memcpy(burst + i * m, frame, m);
    for (int i = 0; i < 5000; ++i) {
      if (write(3, burst, 256 * m) <= 0) break;
      usleep(2000);
    }
    snprintf(out, n, "flooded");
  } else if (strcmp(name, "fenced_flood") == 0) {
    /* ERP calls for a delivery that does not exist any more (id 1 when this is the second):
       each is answered CG_FENCED — and the worker's main thread, which reads the channel, never
       reads again: its recv() now goes to a function that sleeps (the worker's GOT, rewritten; the
       main thread is in recv now and calls it again for the next read). */
    if (patch_main_got("recv", (void *)recv_never) == 0) {
      snprintf(out, n, "recv not found in the worker's GOT");
      return;
    }
    char call[64];
    const size_t m = erp_call_payload(call, "/orders/1/fulfil", 0, 0);
    /* Many frames per write: 1 MiB of them, again and again. */
    char frame[64];
    put32(frame, (uint32_t)m);
    put32(frame + 4, 18);
    put32(frame + 8, 1);
    put32(frame + 12, 0);
    memcpy(frame + 16, call, m);
    const size_t flen = 16 + m, per = (1u << 20) / flen;
    char *buf = malloc(per * flen);
    if (buf == NULL) return;
    for (size_t i = 0; i < per; ++i) memcpy(buf + i * flen, frame, flen);
    for (int i = 0; i < 400; ++i) {
      if (write(3, buf, per * flen) <= 0) break;
    }
    free(buf);
    snprintf(out, n, "flooded");
  } else if (strcmp(name, "x32") == 0) {
    /* execve through the x32 ABI's numbers: another architecture to seccomp. */
    long r = syscall(0x40000000L | 59L, "/bin/sh", NULL, NULL);
    result_of(r == 0, out, n);
  } else if (strcmp(name, "segv") == 0) {
    *(volatile int *)(uintptr_t)8 = 1;
  } else if (strcmp(name, "hide_fault") == 0) {
    /* 3000 ERP calls of delivery 1 (the first on this worker) in one burst, then a forbidden
       call: the host is still answering when the worker dies, and its sends fail. The fault must
       still be reported as the forbidden call, not as a closed channel. */
    static char burst[3000 * 33];
    size_t off = 0;
    for (int i = 0; i < 3000; ++i) {
      char *f = burst + off;
      put32(f, 17);
      put32(f + 4, 18);
      put32(f + 8, 1);
      put32(f + 12, 0);
      put32(f + 16, 3);
      memcpy(f + 20, "GET", 3);
      put32(f + 23, 2);
      memcpy(f + 27, "/x", 2);
      put32(f + 29, 0);
      off += 33;
    }
    for (size_t o = 0; o < off;) {
      long w = write(3, burst + o, off - o);
      if (w <= 0) break;
      o += (size_t)w;
    }
    syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
  } else if (strcmp(name, "supervisor_fd") == 0) {
    /* The socket the worker handed its seccomp listener over (fd 5): closed before any plugin
       code ran. */
    result_of(write(5, "x", 1) == 1, out, n);
  } else if (strcmp(name, "scm_rights") == 0) {
    /* A descriptor in flight on its own channel (SCM_RIGHTS): each one counts against a per-user
       limit every worker of the host shares, so a flood of them made other workers' starts fail. */
    char byte = 'x';
    struct iovec iov = {&byte, 1};
    union {
      char buf[CMSG_SPACE(sizeof(int))];
      struct cmsghdr align;
    } control;
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    memset(&control, 0, sizeof control);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.buf;
    msg.msg_controllen = sizeof control.buf;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    const int zero = 0;
    memcpy(CMSG_DATA(c), &zero, sizeof zero);
    result_of(sendmsg(3, &msg, 0) == 1, out, n);
  } else if (strcmp(name, "bad_nr") == 0) {
    /* A number no system call has: still held and reported, and named by its number. */
    result_of(syscall(-1L) == 0, out, n);
  } else if (strcmp(name, "x32_socket") == 0) {
    /* socket through the x32 ABI's numbers. */
    result_of(syscall(0x40000000L | 41L, AF_INET, SOCK_STREAM, 0) >= 0, out, n);
  } else if (strcmp(name, "socket_after") == 0) {
    /* socket() once the clock has passed |arg| (Unix seconds): in init, a worker that started
       before then loads, and a restart after then makes the forbidden call. */
    if (time(NULL) >= atol(arg))
      result_of(socket(AF_INET, SOCK_STREAM, 0) >= 0, out, n);
    else
      snprintf(out, n, "not yet");
  } else if (strcmp(name, "handler_then_socket") == 0) {
    /* A handler for a signal someone outside sends (another process with the worker's outside
       uid), then forbidden calls: a handler run while one is held would withdraw its report. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    const int installed = sigaction(SIGUSR1, &sa, NULL) == 0;
    for (int i = 0; i < 100000; ++i) syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
    snprintf(out, n, "fault hidden (handler %s)", installed ? "installed" : "refused");
  } else if (strcmp(name, "exit159") == 0) {
    /* The status a worker's own fault handler once exited with: an exit, nothing more. */
    _exit(159);
  } else if (strcmp(name, "signal_storm") == 0) {
    /* A handler without SA_RESTART and a thread sending its signal to this one again and again,
       then a forbidden call: a signal arriving while the call is held would withdraw the kernel's
       report before the host read it. */
    struct sigaction sa;
    pthread_t t;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    g_storm_target = (pid_t)syscall(SYS_gettid);
    pthread_create(&t, NULL, signal_storm, NULL);
    sleep(5); /* the storm's first signal comes first (and is reported: tgkill of SIGUSR1) */
    for (int i = 0; i < 1000000; ++i) syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
    snprintf(out, n, "fault hidden");
  } else if (strcmp(name, "threads") == 0) {
    /* Threads until the kernel refuses one, each asleep on a small stack: unbounded, they would
       spend the tasks the host's cgroup allows it (systemd's TasksMax) and leave the host unable to
       start a thread of its own. */
    pthread_attr_t small;
    pthread_t t;
    int made = 0, rc = 0;
    pthread_attr_init(&small);
    pthread_attr_setstacksize(&small, 64 * 1024);
    while (made < 100000 && (rc = pthread_create(&t, &small, sleep_forever, NULL)) == 0) ++made;
    snprintf(out, n, "%s after %d", rc == 0 ? "succeeded" : strerror(rc), made);
  } else if (strcmp(name, "hidden_fault") == 0) {
    /* A forbidden call with the stack pointer on unmapped memory and a SIGSEGV handler on an
       alternate stack: a report that needed a signal delivered in the worker would turn into a
       SIGSEGV this handler catches. Answers only if the fault was hidden. */
    static stack_t alt;
    struct sigaction sa;
    alt.ss_size = 1 << 16;
    alt.ss_sp = malloc(alt.ss_size);
    (void)sigaltstack(&alt, NULL);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = hidden_fault_caught;
    sa.sa_flags = SA_ONSTACK | SA_NODEFER;
    sigaction(SIGSEGV, &sa, NULL);
    if (sigsetjmp(g_hidden_jump, 1) == 0) bad_stack_socket();
    snprintf(out, n, "fault hidden");
  } else if (strcmp(name, "hostname") == 0) {
    /* The machine's name (what a plugin could report home or use to pick its victims). */
    char host[256] = {0};
    if (gethostname(host, sizeof host - 1) == 0)
      snprintf(out, n, "%s", host);
    else
      result_of(0, out, n);
  } else if (strcmp(name, "send_oob") == 0) {
    /* Out-of-band data on its own channel (AF_UNIX MSG_OOB): a kernel path no channel needs. */
    (void)send(3, "!", 1, MSG_OOB);
  } else if (strcmp(name, "outlive") == 0) {
    /* Outlive the host: a filter of the plugin's own, on every thread (TSYNC), makes exit_group
       fail (an errno result wins over the sandbox's allow), so the worker's exit on EOF ends only
       its main thread, and a thread sleeps on. Only a signal from outside ends such a process. */
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_exit_group, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
    pthread_t t;
    int ok = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) == 0 &&
             pthread_create(&t, NULL, sleep_forever, NULL) == 0;
    result_of(ok, out, n);
  }
}

#ifdef HOSTILE_ARG
#define LOAD_ARG HOSTILE_ARG
#else
#define LOAD_ARG ""
#endif

#ifdef HOSTILE_CTOR
__attribute__((constructor)) static void hostile_ctor(void) {
  attack(HOSTILE_CTOR, LOAD_ARG, g_load_result, sizeof g_load_result);
}
#endif

static int hostile_init(const cg_host_api *host) {
  g_host = host;
#ifdef HOSTILE_INIT
  attack(HOSTILE_INIT, LOAD_ARG, g_load_result, sizeof g_load_result);
#endif
  return 0;
}

/* field copies the JSON string value of "key" in |body| (no escapes) into |out|. */
static void field(const cg_bytes *body, const char *key, char *out, size_t n) {
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
  out[0] = 0;
  const char *b = body->data;
  size_t len = body->len, plen = strlen(pattern);
  for (size_t i = 0; i + plen <= len; ++i) {
    if (memcmp(b + i, pattern, plen) != 0) continue;
    size_t j = i + plen, k = 0;
    while (j < len && b[j] != '"' && k + 1 < n) out[k++] = b[j++];
    out[k] = 0;
    return;
  }
}

static int handle(cg_call *call, const char *route, const cg_request *req) {
  (void)route;
  char name[64], arg[256], result[256], answer[640];
  field(&req->body, "attack", name, sizeof name);
  field(&req->body, "arg", arg, sizeof arg);
  if (strcmp(name, "respond_twice") == 0) {
    test_respond_json(call, 200, "{}");
    test_respond_json(call, 200, "{}");
    return 0;
  }
  if (strcmp(name, "respond_flood") == 0) {
    /* 40 answers of 4 MiB through the API: the worker sends the later ones without their body. */
    static char big[4u << 20];
    memset(big, 'B', sizeof big);
    for (int i = 0; i < 40; ++i) g_host->respond(call, 200, "text/plain", (cg_bytes){big, sizeof big});
    return 0;
  }
  if (strcmp(name, "raw_respond_twice") == 0 || strcmp(name, "raw_big_log") == 0 ||
      strcmp(name, "raw_half_log") == 0) {
    /* Written on the channel past the worker: delivery 1 (the first on this worker). */
    static char payload[(1u << 20) + 64];
    size_t k = 0;
    if (strcmp(name, "raw_half_log") == 0) {
      /* The header of a 16 MiB + 64 KiB log frame and 64 KiB of it, the rest never: the host
         must not hold the frame while it waits. */
      char h[16];
      put32(h, (16u << 20) + (64u << 10));
      put32(h + 4, 20);
      put32(h + 8, 1);
      put32(h + 12, 0);
      memset(payload, 'H', 64u << 10);
      if (write(3, h, 16) == 16) (void)!write(3, payload, 64u << 10);
      sleep(5);
      return 0;
    }
    if (strcmp(name, "raw_respond_twice") == 0) {
      put32(payload + k, 200);
      put32(payload + k + 4, 0);
      k += 8;
      put32(payload + k, 1u << 20);
      memset(payload + k + 4, 'C', 1u << 20);
      k += 4 + (1u << 20);
      raw_frame(19, 1, payload, (uint32_t)k);
      raw_frame(19, 1, payload, (uint32_t)k);
    } else {
      put32(payload + k, 1);
      put32(payload + k + 4, 1u << 20);
      memset(payload + k + 8, 'L', 1u << 20);
      k += 8 + (1u << 20);
      raw_frame(20, 1, payload, (uint32_t)k);
    }
    sleep(5); /* the host kills the worker meanwhile */
    return 0;
  }
  if (strcmp(name, "bad_status") == 0) {
    test_respond_json(call, 99, "{}");
    return 0;
  }
  if (strcmp(name, "slow_call") == 0 || strcmp(name, "fill_sessions") == 0) {
    /* slow_call: an honest ERP call (the test makes the ERP slow). fill_sessions: the same, and
       meanwhile a thread sends two 15 MiB answers to each of deliveries 1..ARG, each below what
       the host holds for one delivery, together above what it holds for one worker. */
    if (strcmp(name, "fill_sessions") == 0) {
      static int count;
      static pthread_t t;
      count = atoi(arg);
      pthread_create(&t, NULL, fill_sessions, &count);
      sleep(60); /* the host kills the worker meanwhile */
      return 0;
    }
    cg_bytes reply = {NULL, 0};
    const int r = g_host->erp_call(call, "POST", "/orders/1/fulfil", (cg_bytes){"{}", 2}, &reply);
    snprintf(answer, sizeof answer, "{\"attack\":\"%s\",\"result\":\"erp %d\"}", name, r);
    test_respond_json(call, 200, answer);
    return 0;
  }
  if (strcmp(name, "log_flood") == 0) {
    for (int i = 0; i < 10000; ++i) g_host->log(call, 1, "flood");
    test_respond_json(call, 200, "{}");
    return 0;
  }
  attack(name, arg, result, sizeof result);
  snprintf(answer, sizeof answer, "{\"attack\":\"%s\",\"result\":\"%s\"}", name, result);
  test_respond_json(call, 200, answer);
  return 0;
}

CG_EXPORT const cg_plugin *clawguard_plugin_v1(void) {
  static const cg_plugin p = {CLAWGUARD_PLUGIN_ABI, 0, hostile_init, handle, NULL};
  return &p;
}
