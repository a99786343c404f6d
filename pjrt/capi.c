#include "capi.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

// TT_HAS reports whether the plugin's API table is long enough to hold fn and
// fn is set.
#define TT_HAS(api, fn)                                           \
  ((api)->struct_size >= offsetof(PJRT_Api, fn) + sizeof(void*) && \
   (api)->fn != NULL)

#define TT_INIT(T, var) \
  T var;                \
  memset(&var, 0, sizeof(var)); \
  var.struct_size = T##_STRUCT_SIZE

static char* tt_strdup(const char* s) {
  size_t n = strlen(s);
  char* d = (char*)malloc(n + 1);
  if (d != NULL) memcpy(d, s, n + 1);
  return d;
}

const PJRT_Api* tt_load(const char* path, void** handle_out, char** err_out) {
  *err_out = NULL;
  *handle_out = NULL;
  // The handle is never closed: plugins do not support being unloaded.
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    const char* e = dlerror();
    *err_out = tt_strdup(e != NULL ? e : "dlopen failed");
    return NULL;
  }
  *handle_out = h;
  typedef const PJRT_Api* (*get_api_fn)(void);
  get_api_fn get = (get_api_fn)dlsym(h, "GetPjrtApi");
  if (get == NULL) {
    *err_out = tt_strdup("symbol GetPjrtApi not found: not a PJRT plugin");
    return NULL;
  }
  const PJRT_Api* api = get();
  if (api == NULL) {
    *err_out = tt_strdup("GetPjrtApi returned NULL");
    return NULL;
  }
  return api;
}

void tt_api_version(const PJRT_Api* api, int* major, int* minor) {
  *major = api->pjrt_api_version.major_version;
  *minor = api->pjrt_api_version.minor_version;
}

int tt_header_major(void) { return PJRT_API_MAJOR; }
int tt_header_minor(void) { return PJRT_API_MINOR; }

int tt_has_plugin_initialize(const PJRT_Api* api) {
  return TT_HAS(api, PJRT_Plugin_Initialize);
}
int tt_has_executable_fingerprint(const PJRT_Api* api) {
  return TT_HAS(api, PJRT_Executable_Fingerprint);
}
int tt_has_deserialize(const PJRT_Api* api) {
  return TT_HAS(api, PJRT_Executable_DeserializeAndLoad);
}

PJRT_Error* tt_plugin_initialize(const PJRT_Api* api) {
  TT_INIT(PJRT_Plugin_Initialize_Args, a);
  return api->PJRT_Plugin_Initialize(&a);
}

void tt_error_take(const PJRT_Api* api, PJRT_Error* err, char** msg,
                   size_t* msg_len, int* code) {
  TT_INIT(PJRT_Error_Message_Args, m);
  m.error = err;
  api->PJRT_Error_Message(&m);
  *msg_len = m.message_size;
  *msg = (char*)malloc(m.message_size + 1);
  if (*msg != NULL) {
    if (m.message_size > 0) memcpy(*msg, m.message, m.message_size);
    (*msg)[m.message_size] = 0;
  } else {
    *msg_len = 0;
  }
  *code = PJRT_Error_Code_UNKNOWN;
  if (api->PJRT_Error_GetCode != NULL) {
    TT_INIT(PJRT_Error_GetCode_Args, g);
    g.error = err;
    PJRT_Error* e2 = api->PJRT_Error_GetCode(&g);
    if (e2 == NULL) {
      *code = (int)g.code;
    } else {
      TT_INIT(PJRT_Error_Destroy_Args, d2);
      d2.error = e2;
      api->PJRT_Error_Destroy(&d2);
    }
  }
  TT_INIT(PJRT_Error_Destroy_Args, d);
  d.error = err;
  api->PJRT_Error_Destroy(&d);
}

PJRT_Error* tt_client_create(const PJRT_Api* api, int64_t cpu_device_count,
                             PJRT_Client** out) {
  TT_INIT(PJRT_NamedValue, nv);
  static const char kName[] = "cpu_device_count";
  nv.name = kName;
  nv.name_size = sizeof(kName) - 1;
  nv.type = PJRT_NamedValue_kInt64;
  nv.int64_value = cpu_device_count;
  nv.value_size = 1;
  TT_INIT(PJRT_Client_Create_Args, a);
  if (cpu_device_count > 0) {
    a.create_options = &nv;
    a.num_options = 1;
  }
  PJRT_Error* e = api->PJRT_Client_Create(&a);
  *out = a.client;
  return e;
}

PJRT_Error* tt_client_destroy(const PJRT_Api* api, PJRT_Client* c) {
  TT_INIT(PJRT_Client_Destroy_Args, a);
  a.client = c;
  return api->PJRT_Client_Destroy(&a);
}

PJRT_Error* tt_client_platform_name(const PJRT_Api* api, PJRT_Client* c,
                                    const char** s, size_t* n) {
  TT_INIT(PJRT_Client_PlatformName_Args, a);
  a.client = c;
  PJRT_Error* e = api->PJRT_Client_PlatformName(&a);
  *s = a.platform_name;
  *n = a.platform_name_size;
  return e;
}

PJRT_Error* tt_client_platform_version(const PJRT_Api* api, PJRT_Client* c,
                                       const char** s, size_t* n) {
  TT_INIT(PJRT_Client_PlatformVersion_Args, a);
  a.client = c;
  PJRT_Error* e = api->PJRT_Client_PlatformVersion(&a);
  *s = a.platform_version;
  *n = a.platform_version_size;
  return e;
}

PJRT_Error* tt_device_kind(const PJRT_Api* api, PJRT_Device* d, const char** s,
                          size_t* n) {
  TT_INIT(PJRT_Device_GetDescription_Args, g);
  g.device = d;
  PJRT_Error* e = api->PJRT_Device_GetDescription(&g);
  if (e != NULL) return e;
  TT_INIT(PJRT_DeviceDescription_Kind_Args, a);
  a.device_description = g.device_description;
  e = api->PJRT_DeviceDescription_Kind(&a);
  *s = a.device_kind;
  *n = a.device_kind_size;
  return e;
}

PJRT_Error* tt_client_addressable_devices(const PJRT_Api* api, PJRT_Client* c,
                                          PJRT_Device* const** devs,
                                          size_t* n) {
  TT_INIT(PJRT_Client_AddressableDevices_Args, a);
  a.client = c;
  PJRT_Error* e = api->PJRT_Client_AddressableDevices(&a);
  *devs = a.addressable_devices;
  *n = a.num_addressable_devices;
  return e;
}

PJRT_Error* tt_event_await(const PJRT_Api* api, PJRT_Event* ev) {
  TT_INIT(PJRT_Event_Await_Args, a);
  a.event = ev;
  return api->PJRT_Event_Await(&a);
}

PJRT_Error* tt_event_is_ready(const PJRT_Api* api, PJRT_Event* ev,
                              int* ready) {
  TT_INIT(PJRT_Event_IsReady_Args, a);
  a.event = ev;
  PJRT_Error* e = api->PJRT_Event_IsReady(&a);
  *ready = a.is_ready ? 1 : 0;
  return e;
}

PJRT_Error* tt_event_destroy(const PJRT_Api* api, PJRT_Event* ev) {
  TT_INIT(PJRT_Event_Destroy_Args, a);
  a.event = ev;
  return api->PJRT_Event_Destroy(&a);
}

// tt_await_destroy waits for ev, destroys it, and returns the first error.
static PJRT_Error* tt_await_destroy(const PJRT_Api* api, PJRT_Event* ev) {
  if (ev == NULL) return NULL;
  PJRT_Error* e = tt_event_await(api, ev);
  PJRT_Error* e2 = tt_event_destroy(api, ev);
  if (e == NULL) return e2;
  if (e2 != NULL) {
    TT_INIT(PJRT_Error_Destroy_Args, d);
    d.error = e2;
    api->PJRT_Error_Destroy(&d);
  }
  return e;
}

PJRT_Error* tt_buffer_from_host(const PJRT_Api* api, PJRT_Client* c,
                                const void* data, int type,
                                const int64_t* dims, size_t ndims,
                                PJRT_Device* dev, PJRT_Buffer** out) {
  TT_INIT(PJRT_Client_BufferFromHostBuffer_Args, a);
  a.client = c;
  a.data = data;
  a.type = (PJRT_Buffer_Type)type;
  a.dims = dims;
  a.num_dims = ndims;
  a.host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall;
  a.device = dev;
  *out = NULL;
  PJRT_Error* e = api->PJRT_Client_BufferFromHostBuffer(&a);
  if (e != NULL) return e;
  *out = a.buffer;
  // The data must not be referenced after this call returns; waiting here
  // makes that hold even for plugins that treat the semantics loosely.
  return tt_await_destroy(api, a.done_with_host_buffer);
}

PJRT_Error* tt_buffer_destroy(const PJRT_Api* api, PJRT_Buffer* b) {
  TT_INIT(PJRT_Buffer_Destroy_Args, a);
  a.buffer = b;
  return api->PJRT_Buffer_Destroy(&a);
}

PJRT_Error* tt_buffer_element_type(const PJRT_Api* api, PJRT_Buffer* b,
                                   int* type) {
  TT_INIT(PJRT_Buffer_ElementType_Args, a);
  a.buffer = b;
  PJRT_Error* e = api->PJRT_Buffer_ElementType(&a);
  *type = (int)a.type;
  return e;
}

PJRT_Error* tt_buffer_dims(const PJRT_Api* api, PJRT_Buffer* b,
                           const int64_t** dims, size_t* n) {
  TT_INIT(PJRT_Buffer_Dimensions_Args, a);
  a.buffer = b;
  PJRT_Error* e = api->PJRT_Buffer_Dimensions(&a);
  *dims = a.dims;
  *n = a.num_dims;
  return e;
}

PJRT_Error* tt_buffer_device(const PJRT_Api* api, PJRT_Buffer* b,
                             PJRT_Device** dev) {
  TT_INIT(PJRT_Buffer_Device_Args, a);
  a.buffer = b;
  PJRT_Error* e = api->PJRT_Buffer_Device(&a);
  *dev = a.device;
  return e;
}

PJRT_Error* tt_buffers_describe(const PJRT_Api* api, PJRT_Buffer** bufs,
                                size_t n, int* types, const int64_t** dims,
                                size_t* ndims, PJRT_Device** devs) {
  for (size_t i = 0; i < n; i++) {
    PJRT_Error* e = tt_buffer_element_type(api, bufs[i], &types[i]);
    if (e == NULL) e = tt_buffer_dims(api, bufs[i], &dims[i], &ndims[i]);
    if (e == NULL) e = tt_buffer_device(api, bufs[i], &devs[i]);
    if (e != NULL) return e;
  }
  return NULL;
}

PJRT_Error* tt_buffers_destroy(const PJRT_Api* api, PJRT_Buffer** bufs,
                               size_t n) {
  PJRT_Error* first = NULL;
  for (size_t i = 0; i < n; i++) {
    PJRT_Error* e = tt_buffer_destroy(api, bufs[i]);
    if (e == NULL) continue;
    if (first == NULL) {
      first = e;
    } else {
      TT_INIT(PJRT_Error_Destroy_Args, d);
      d.error = e;
      api->PJRT_Error_Destroy(&d);
    }
  }
  return first;
}

PJRT_Error* tt_buffer_host_size(const PJRT_Api* api, PJRT_Buffer* b,
                                size_t* n) {
  TT_INIT(PJRT_Buffer_ToHostBuffer_Args, a);
  a.src = b;
  a.dst = NULL;
  PJRT_Error* e = api->PJRT_Buffer_ToHostBuffer(&a);
  *n = a.dst_size;
  return e;
}

PJRT_Error* tt_buffer_to_host(const PJRT_Api* api, PJRT_Buffer* b, void* dst,
                              size_t n) {
  TT_INIT(PJRT_Buffer_ToHostBuffer_Args, a);
  a.src = b;
  a.dst = dst;
  a.dst_size = n;
  PJRT_Error* e = api->PJRT_Buffer_ToHostBuffer(&a);
  if (e != NULL) return e;
  return tt_await_destroy(api, a.event);
}

// tt_buffer_read_direct copies b into dst with memcpy when b lives in host
// memory (a CPU plugin) in the dense row-major layout of n bytes, after waiting
// for b to be computed; *done says whether it did. Otherwise (another layout or
// size, or a plugin without these entry points) it leaves dst alone and *done
// 0, so the caller falls back to PJRT_Buffer_ToHostBuffer, which on a CPU
// plugin hands the copy to a worker thread and waits on an event for it.
PJRT_Error* tt_buffer_read_direct(const PJRT_Api* api, PJRT_Buffer* b,
                                  void* dst, size_t n, int* done) {
  *done = 0;
  if (api->PJRT_Buffer_UnsafePointer == NULL ||
      api->PJRT_Buffer_OnDeviceSizeInBytes == NULL ||
      api->PJRT_Buffer_GetMemoryLayout == NULL)
    return NULL;
  PJRT_Event* ev = NULL;
  PJRT_Error* e = tt_buffer_ready_event(api, b, &ev);
  if (e != NULL) return e;
  e = tt_await_destroy(api, ev);
  if (e != NULL) return e;
  TT_INIT(PJRT_Buffer_OnDeviceSizeInBytes_Args, sz);
  sz.buffer = b;
  if (api->PJRT_Buffer_OnDeviceSizeInBytes(&sz) != NULL) return NULL;
  if (sz.on_device_size_in_bytes != n) return NULL;
  TT_INIT(PJRT_Buffer_GetMemoryLayout_Args, lay);
  lay.buffer = b;
  PJRT_Error* le = api->PJRT_Buffer_GetMemoryLayout(&lay);
  if (le != NULL) {
    TT_INIT(PJRT_Error_Destroy_Args, d);
    d.error = le;
    api->PJRT_Error_Destroy(&d);
    return NULL;
  }
  if (lay.layout.type != PJRT_Buffer_MemoryLayout_Type_Tiled ||
      lay.layout.tiled.num_tiles != 0)
    return NULL;
  size_t rank = lay.layout.tiled.minor_to_major_size;
  for (size_t i = 0; i < rank; i++)
    if (lay.layout.tiled.minor_to_major[i] != (int64_t)(rank - 1 - i))
      return NULL;
  TT_INIT(PJRT_Buffer_UnsafePointer_Args, ptr);
  ptr.buffer = b;
  PJRT_Error* pe = api->PJRT_Buffer_UnsafePointer(&ptr);
  if (pe != NULL) {
    TT_INIT(PJRT_Error_Destroy_Args, d);
    d.error = pe;
    api->PJRT_Error_Destroy(&d);
    return NULL;
  }
  if (ptr.buffer_pointer == 0 && n != 0) return NULL;
  memcpy(dst, (const void*)ptr.buffer_pointer, n);
  *done = 1;
  return NULL;
}

PJRT_Error* tt_buffer_ready_event(const PJRT_Api* api, PJRT_Buffer* b,
                                  PJRT_Event** ev) {
  TT_INIT(PJRT_Buffer_ReadyEvent_Args, a);
  a.buffer = b;
  PJRT_Error* e = api->PJRT_Buffer_ReadyEvent(&a);
  *ev = a.event;
  return e;
}

PJRT_Error* tt_compile(const PJRT_Api* api, PJRT_Client* c, const char* code,
                       size_t code_size, const char* format,
                       const char* options, size_t options_size,
                       PJRT_LoadedExecutable** out) {
  TT_INIT(PJRT_Program, p);
  p.code = (char*)code;
  p.code_size = code_size;
  p.format = format;
  p.format_size = strlen(format);
  TT_INIT(PJRT_Client_Compile_Args, a);
  a.client = c;
  a.program = &p;
  a.compile_options = options;
  a.compile_options_size = options_size;
  PJRT_Error* e = api->PJRT_Client_Compile(&a);
  *out = a.executable;
  return e;
}

PJRT_Error* tt_deserialize(const PJRT_Api* api, PJRT_Client* c,
                           const char* data, size_t n,
                           PJRT_LoadedExecutable** out) {
  TT_INIT(PJRT_Executable_DeserializeAndLoad_Args, a);
  a.client = c;
  a.serialized_executable = data;
  a.serialized_executable_size = n;
  PJRT_Error* e = api->PJRT_Executable_DeserializeAndLoad(&a);
  *out = a.loaded_executable;
  return e;
}

PJRT_Error* tt_loaded_get_executable(const PJRT_Api* api,
                                     PJRT_LoadedExecutable* le,
                                     PJRT_Executable** out) {
  TT_INIT(PJRT_LoadedExecutable_GetExecutable_Args, a);
  a.loaded_executable = le;
  PJRT_Error* e = api->PJRT_LoadedExecutable_GetExecutable(&a);
  *out = a.executable;
  return e;
}

PJRT_Error* tt_loaded_destroy(const PJRT_Api* api, PJRT_LoadedExecutable* le) {
  TT_INIT(PJRT_LoadedExecutable_Destroy_Args, a);
  a.executable = le;
  return api->PJRT_LoadedExecutable_Destroy(&a);
}

PJRT_Error* tt_executable_destroy(const PJRT_Api* api, PJRT_Executable* e) {
  TT_INIT(PJRT_Executable_Destroy_Args, a);
  a.executable = e;
  return api->PJRT_Executable_Destroy(&a);
}

PJRT_Error* tt_executable_num_outputs(const PJRT_Api* api, PJRT_Executable* e,
                                      size_t* n) {
  TT_INIT(PJRT_Executable_NumOutputs_Args, a);
  a.executable = e;
  PJRT_Error* err = api->PJRT_Executable_NumOutputs(&a);
  *n = a.num_outputs;
  return err;
}

PJRT_Error* tt_loaded_addressable_devices(const PJRT_Api* api,
                                          PJRT_LoadedExecutable* le,
                                          PJRT_Device* const** devs,
                                          size_t* n) {
  TT_INIT(PJRT_LoadedExecutable_AddressableDevices_Args, a);
  a.executable = le;
  PJRT_Error* e = api->PJRT_LoadedExecutable_AddressableDevices(&a);
  *devs = a.addressable_devices;
  *n = a.num_addressable_devices;
  return e;
}

PJRT_Error* tt_executable_serialize(const PJRT_Api* api, PJRT_Executable* e,
                                    char** out, size_t* n) {
  TT_INIT(PJRT_Executable_Serialize_Args, a);
  a.executable = e;
  *out = NULL;
  *n = 0;
  PJRT_Error* err = api->PJRT_Executable_Serialize(&a);
  if (err != NULL) return err;
  *out = (char*)malloc(a.serialized_bytes_size > 0 ? a.serialized_bytes_size
                                                    : 1);
  if (*out != NULL) {
    memcpy(*out, a.serialized_bytes, a.serialized_bytes_size);
    *n = a.serialized_bytes_size;
  }
  if (a.serialized_executable_deleter != NULL) {
    a.serialized_executable_deleter(a.serialized_executable);
  }
  return NULL;
}

PJRT_Error* tt_executable_fingerprint(const PJRT_Api* api, PJRT_Executable* e,
                                      const char** s, size_t* n) {
  TT_INIT(PJRT_Executable_Fingerprint_Args, a);
  a.executable = e;
  PJRT_Error* err = api->PJRT_Executable_Fingerprint(&a);
  *s = a.executable_fingerprint;
  *n = a.executable_fingerprint_size;
  return err;
}

PJRT_Error* tt_execute(const PJRT_Api* api, PJRT_LoadedExecutable* le,
                       PJRT_Buffer* const* args, size_t nargs,
                       PJRT_Device* dev, PJRT_Buffer** outs,
                       PJRT_Event** done) {
  TT_INIT(PJRT_ExecuteOptions, opts);
  PJRT_Buffer* const* arg_lists[1] = {args};
  PJRT_Buffer** out_lists[1] = {outs};
  PJRT_Event* events[1] = {NULL};
  TT_INIT(PJRT_LoadedExecutable_Execute_Args, a);
  a.executable = le;
  a.options = &opts;
  a.argument_lists = arg_lists;
  a.num_devices = 1;
  a.num_args = nargs;
  a.output_lists = out_lists;
  a.device_complete_events = events;
  a.execute_device = dev;
  PJRT_Error* e = api->PJRT_LoadedExecutable_Execute(&a);
  *done = events[0];
  return e;
}
