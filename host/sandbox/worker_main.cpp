// worker_main.cpp — the clawguard-worker executable (host/sandbox/worker_serve.h).
#include "host/sandbox/worker_serve.h"

int main(int argc, char** argv) { return clawguard::sandbox::WorkerMain(argc, argv); }
