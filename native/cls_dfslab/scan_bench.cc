// The object class's scan outside Ceph: cls_dfslab.cc linked with this stand-in for the few SDK
// entry points it calls, so one query method call runs on an object held in memory. cls_read
// copies the object into a malloc'd buffer, as the OSD's does; what the OSD adds (the BlueStore
// read, the op queue, the messenger) is left out, so the figure is the class's own work.
//
//   scan_bench OBJECT REQUEST ITERATIONS   ->  "<seconds per call> <answer bytes> <object bytes>"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <string>
#include <vector>

#include "objclass_c.h"

extern "C" void __cls_init();

namespace {
std::string object;
cls_method_call_t method = nullptr;

std::string slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) { perror(path); exit(2); }
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  fclose(f);
  return out;
}

double now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
}  // namespace

extern "C" {
int cls_register(const char *, cls_handle_t *handle) { *handle = nullptr; return 0; }
int cls_register_method(cls_handle_t, const char *, int, cls_method_call_t call, cls_method_handle_t *) {
  method = call;
  return 0;
}
int cls_read(cls_method_context_t, int ofs, int len, char **out, int *outlen) {
  if (ofs < 0 || static_cast<size_t>(ofs) > object.size()) return -22;
  size_t n = std::min(static_cast<size_t>(len), object.size() - ofs);
  *out = static_cast<char *>(malloc(n ? n : 1));
  memcpy(*out, object.data() + ofs, n);
  *outlen = static_cast<int>(n);
  return static_cast<int>(n);
}
int cls_log(int, const char *, ...) { return 0; }
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s OBJECT REQUEST ITERATIONS\n", argv[0]);
    return 2;
  }
  object = slurp(argv[1]);
  std::string request = slurp(argv[2]);
  int iterations = atoi(argv[3]);
  __cls_init();
  if (!method || iterations < 1) return 2;
  int answer = 0;
  double start = now();
  for (int i = 0; i < iterations; i++) {
    char *out = nullptr;
    int outlen = 0;
    int r = method(nullptr, request.data(), static_cast<int>(request.size()), &out, &outlen);
    if (r < 0) { fprintf(stderr, "query returned %d\n", r); return 1; }
    answer = outlen;
    free(out);
  }
  printf("%.9f %d %zu\n", (now() - start) / iterations, answer, object.size());
  return 0;
}
