// The C side of Event.OnReady: the plugin calls tt_on_ready_trampoline on one
// of its own threads when an event completes; it reads the clock, destroys the
// event's error (the callback owns it) and hands the Go handle back to Go.
#include <string.h>
#include <time.h>

#include "capi.h"
#include "_cgo_export.h"

static const PJRT_Api* tt_ready_api;

static void tt_on_ready_trampoline(PJRT_Error* err, void* user_arg) {
  // The time is taken here, before the first call into Go on this thread
  // (which pays for attaching the thread to the Go runtime).
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
  int failed = err != NULL;
  if (err != NULL) {
    PJRT_Error_Destroy_Args d;
    memset(&d, 0, sizeof(d));
    d.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE;
    d.error = err;
    tt_ready_api->PJRT_Error_Destroy(&d);
  }
  ttGoEventReady((uintptr_t)user_arg, failed, now);
}

PJRT_Error* tt_event_on_ready(const PJRT_Api* api, PJRT_Event* ev,
                              uintptr_t handle) {
  tt_ready_api = api;
  PJRT_Event_OnReady_Args a;
  memset(&a, 0, sizeof(a));
  a.struct_size = PJRT_Event_OnReady_Args_STRUCT_SIZE;
  a.event = ev;
  a.callback = tt_on_ready_trampoline;
  a.user_arg = (void*)handle;
  return api->PJRT_Event_OnReady(&a);
}
