// Small C helpers over the PJRT C API. Every helper takes the plugin's API
// table, fills the PJRT argument struct (struct_size included) and returns the
// plugin's PJRT_Error* (NULL on success). None of them keeps a pointer it was
// given after it returns.
#ifndef TORCHTPU_PJRT_CAPI_H_
#define TORCHTPU_PJRT_CAPI_H_

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "pjrt_c_api.h"

// Plugin loading and errors.
const PJRT_Api* tt_load(const char* path, void** handle_out, char** err_out);

// hostcache.c: reuse of the plugin's large host blocks (see there).
int tt_hostcache_install(void* handle, size_t limit);
void tt_hostcache_release(void);
void tt_hostcache_stats(uint64_t* free_bytes, uint64_t* live_bytes, uint64_t* hits, uint64_t* misses);
int tt_hostheap_hold(void);
void tt_api_version(const PJRT_Api* api, int* major, int* minor);
int tt_header_major(void);
int tt_header_minor(void);
int tt_has_plugin_initialize(const PJRT_Api* api);
int tt_has_executable_fingerprint(const PJRT_Api* api);
int tt_has_deserialize(const PJRT_Api* api);
PJRT_Error* tt_plugin_initialize(const PJRT_Api* api);
// tt_error_take copies the message of err into *msg (malloc'd, caller frees),
// stores its code, and destroys err.
void tt_error_take(const PJRT_Api* api, PJRT_Error* err, char** msg,
                   size_t* msg_len, int* code);

// Client.
PJRT_Error* tt_client_create(const PJRT_Api* api, int64_t cpu_device_count,
                             PJRT_Client** out);
PJRT_Error* tt_client_destroy(const PJRT_Api* api, PJRT_Client* c);
PJRT_Error* tt_client_platform_name(const PJRT_Api* api, PJRT_Client* c,
                                    const char** s, size_t* n);
PJRT_Error* tt_client_platform_version(const PJRT_Api* api, PJRT_Client* c,
                                       const char** s, size_t* n);
PJRT_Error* tt_device_kind(const PJRT_Api* api, PJRT_Device* d, const char** s,
                          size_t* n);
PJRT_Error* tt_client_addressable_devices(const PJRT_Api* api, PJRT_Client* c,
                                          PJRT_Device* const** devs,
                                          size_t* n);

// Buffers.
PJRT_Error* tt_buffer_from_host(const PJRT_Api* api, PJRT_Client* c,
                                const void* data, int type,
                                const int64_t* dims, size_t ndims,
                                PJRT_Device* dev, PJRT_Buffer** out);
PJRT_Error* tt_buffer_destroy(const PJRT_Api* api, PJRT_Buffer* b);
PJRT_Error* tt_buffer_element_type(const PJRT_Api* api, PJRT_Buffer* b,
                                   int* type);
PJRT_Error* tt_buffer_dims(const PJRT_Api* api, PJRT_Buffer* b,
                           const int64_t** dims, size_t* n);
PJRT_Error* tt_buffer_device(const PJRT_Api* api, PJRT_Buffer* b,
                             PJRT_Device** dev);
// tt_buffers_describe gives, for each of the n buffers, its element type, its
// dimensions (the plugin's array, valid while the buffer lives) and their
// count, and its device: one call for a launch's results.
PJRT_Error* tt_buffers_describe(const PJRT_Api* api, PJRT_Buffer** bufs,
                                size_t n, int* types, const int64_t** dims,
                                size_t* ndims, PJRT_Device** devs);
// tt_buffers_destroy destroys the n buffers and returns the first error.
PJRT_Error* tt_buffers_destroy(const PJRT_Api* api, PJRT_Buffer** bufs,
                               size_t n);
PJRT_Error* tt_buffer_host_size(const PJRT_Api* api, PJRT_Buffer* b,
                                size_t* n);
// tt_buffer_to_host copies b into dst and waits for the copy to finish.
PJRT_Error* tt_buffer_to_host(const PJRT_Api* api, PJRT_Buffer* b, void* dst,
                              size_t n);
PJRT_Error* tt_buffer_ready_event(const PJRT_Api* api, PJRT_Buffer* b,
                                  PJRT_Event** ev);
// tt_buffer_read_direct copies a host-memory buffer into dst with memcpy once
// it is ready; *done is 0 when b is not dense host memory of n bytes.
PJRT_Error* tt_buffer_read_direct(const PJRT_Api* api, PJRT_Buffer* b,
                                  void* dst, size_t n, int* done);

// Events.
PJRT_Error* tt_event_await(const PJRT_Api* api, PJRT_Event* ev);
PJRT_Error* tt_event_is_ready(const PJRT_Api* api, PJRT_Event* ev, int* ready);
PJRT_Error* tt_event_destroy(const PJRT_Api* api, PJRT_Event* ev);

// Executables.
PJRT_Error* tt_compile(const PJRT_Api* api, PJRT_Client* c, const char* code,
                       size_t code_size, const char* format,
                       const char* options, size_t options_size,
                       PJRT_LoadedExecutable** out);
PJRT_Error* tt_deserialize(const PJRT_Api* api, PJRT_Client* c,
                           const char* data, size_t n,
                           PJRT_LoadedExecutable** out);
PJRT_Error* tt_loaded_get_executable(const PJRT_Api* api,
                                     PJRT_LoadedExecutable* le,
                                     PJRT_Executable** out);
PJRT_Error* tt_loaded_destroy(const PJRT_Api* api, PJRT_LoadedExecutable* le);
PJRT_Error* tt_executable_destroy(const PJRT_Api* api, PJRT_Executable* e);
PJRT_Error* tt_executable_num_outputs(const PJRT_Api* api, PJRT_Executable* e,
                                      size_t* n);
PJRT_Error* tt_loaded_addressable_devices(const PJRT_Api* api,
                                          PJRT_LoadedExecutable* le,
                                          PJRT_Device* const** devs,
                                          size_t* n);
// tt_executable_serialize returns a malloc'd copy of the serialization.
PJRT_Error* tt_executable_serialize(const PJRT_Api* api, PJRT_Executable* e,
                                    char** out, size_t* n);
PJRT_Error* tt_executable_fingerprint(const PJRT_Api* api, PJRT_Executable* e,
                                      const char** s, size_t* n);
// tt_execute runs le once on one device. dev may be NULL (compile-time
// assignment). outs must hold num_outputs entries.
PJRT_Error* tt_execute(const PJRT_Api* api, PJRT_LoadedExecutable* le,
                       PJRT_Buffer* const* args, size_t nargs,
                       PJRT_Device* dev, PJRT_Buffer** outs,
                       PJRT_Event** done);

#endif  // TORCHTPU_PJRT_CAPI_H_
