/* sandbox_test_lib.c — the library lockdown_probe dlopen()s from a sealed memfd in a confined
 * worker. It needs libelf.so.1 (which the probe does not link), so loading it also proves that the
 * dynamic loader can still resolve a DT_NEEDED library through /etc/ld.so.cache under Landlock.
 * Its constructor runs inside the confinement, like a plugin's. */
#include <libelf.h>
#include <stdlib.h>

static int g_constructed;

__attribute__((constructor)) static void Construct(void) {
  /* A constructor that allocates: malloc must work in the load phase. */
  void* p = malloc(4096);
  g_constructed = p != NULL;
  free(p);
}

/* 42 when the constructor ran and libelf answers. */
__attribute__((visibility("default"))) int cg_sandbox_test_answer(void) {
  return g_constructed && elf_version(EV_CURRENT) != EV_NONE ? 42 : -1;
}
