// The part of Ceph's object-class SDK this class uses: the C entry points that ceph-osd
// exports (`nm -D --defined-only /usr/bin/ceph-osd`). Debian ships no rados/objclass.h, so
// these declarations are written from the exported symbols; only C types cross the boundary,
// so no Ceph header (and no ceph::bufferlist ABI) is needed.
#pragma once
#include <stddef.h>

extern "C" {
typedef void *cls_handle_t;
typedef void *cls_method_handle_t;
typedef void *cls_method_context_t;
// A method gets its input bytes and returns output allocated with malloc (the OSD frees it).
typedef int (*cls_method_call_t)(cls_method_context_t ctx, char *indata, int datalen,
                                 char **outdata, int *outdatalen);

int cls_register(const char *name, cls_handle_t *handle);
int cls_register_method(cls_handle_t hclass, const char *method, int flags,
                        cls_method_call_t class_call, cls_method_handle_t *handle);
// Reads [ofs, ofs+len) of the object the method runs on; *outdata is malloc'd by the OSD.
int cls_read(cls_method_context_t hctx, int ofs, int len, char **outdata, int *outdatalen);
int cls_log(int level, const char *format, ...);
}

// Method flags (OSD op classification): RD = reads the object, never writes it.
#define DFSLAB_CLS_METHOD_RD 0x1
