// A SIGSEGV/SIGBUS handler to preload into a crashing program: prints the backtrace on stderr
// (bench/probes/graph_whole_crash.sh builds it with gcc -shared -fPIC).
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static void handler(int sig, siginfo_t* si, void* uc) {
  void* frames[64];
  char buf[128];
  int n = backtrace(frames, 64);
  int len = snprintf(buf, sizeof buf, "\n=== SIGNAL %d at address %p, thread %d ===\n", sig, si->si_addr, (int)gettid());
  if (write(2, buf, len) < 0) { /* nothing to do */ }
  backtrace_symbols_fd(frames, n, 2);
  signal(sig, SIG_DFL);
  raise(sig);
}
__attribute__((constructor)) static void install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigaction(SIGSEGV, &sa, 0);
  sigaction(SIGBUS, &sa, 0);
}
