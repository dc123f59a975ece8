// Preload into a program to log every exit-handler registration (__cxa_atexit: C++ static
// destructors, atexit) with the time, the thread and the library that registered it, on stderr.
// Which libraries register destructors lazily, on which thread, tells where kreplay's exit
// handler stands among them (bench/probes/setup_at_exit.sh builds it: gcc -shared -fPIC -ldl).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

typedef int (*cxa_atexit_fn)(void (*)(void*), void*, void*);

int __cxa_atexit(void (*func)(void*), void* arg, void* dso) {
    static cxa_atexit_fn real;
    if (!real) real = (cxa_atexit_fn)dlsym(RTLD_NEXT, "__cxa_atexit");
    Dl_info caller = {0}, target = {0};
    dladdr(__builtin_return_address(0), &caller);
    dladdr((void*)func, &target);
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    char line[512];
    int n = snprintf(line, sizeof line, "ATEXIT %ld.%06ld tid %d from %s fn %s (%s)\n", (long)t.tv_sec,
                     t.tv_nsec / 1000, (int)gettid(), caller.dli_fname ? caller.dli_fname : "?",
                     target.dli_sname ? target.dli_sname : "?", target.dli_fname ? target.dli_fname : "?");
    if (n > 0 && write(2, line, n < (int)sizeof line ? n : (int)sizeof line - 1) < 0) { /* nothing */ }
    return real ? real(func, arg, dso) : -1;
}
