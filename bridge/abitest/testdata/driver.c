/*
 * driver calls libtorchtpu's C ABI (bridge/torchtpu.h) the way the C++ shim
 * does, with no PyTorch around it, and prints one line per call:
 *
 *   <name> status=<ttpu_status> <what the call gave>
 *
 * abi_test.go runs one case per process ("values", "errors", "truncate",
 * "bad-plugin", "oom") and checks the lines against values derived by hand.
 * The driver itself asserts nothing, so a wrong value shows in the test's
 * failure message next to what was expected.
 *
 * usage: driver CASE PLUGIN_PATH
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "torchtpu.h"

#define FLOAT32 6 /* c10::ScalarType::Float */

static char err[512];

/* dims holds the sizes and strides the descriptions point at (two entries per tensor). */
static int64_t dims[64][2];
static int ndims;

/* vec describes a contiguous 1-D float32 tensor of n elements at storage addr. */
static ttpu_tensor vec(uint64_t addr, int64_t n) {
  ttpu_tensor t;
  int64_t* d = dims[ndims++ % 64];
  memset(&t, 0, sizeof t);
  t.data = addr;
  t.storage_nbytes = 4 * n;
  t.dtype = FLOAT32;
  t.ndim = 1;
  d[0] = n;
  d[1] = 1;
  t.sizes = &d[0];
  t.strides = &d[1];
  t.device = TTPU_DEV_TPU;
  return t;
}

/* upload allocates a storage for n floats and writes v into it. */
static uint64_t upload(const char* name, const float* v, int64_t n) {
  uint64_t addr = 0;
  ttpu_status s = ttpu_alloc(4 * n, 0, &addr, err, sizeof err);
  if (s != TTPU_OK) {
    printf("%s status=%d alloc: %s\n", name, s, err);
    return 0;
  }
  ttpu_tensor t = vec(addr, n);
  s = ttpu_from_host(&t, v, 4 * n, err, sizeof err);
  if (s != TTPU_OK) printf("%s status=%d upload: %s\n", name, s, err);
  return addr;
}

/* show reads t to the host and prints its values, or the error. */
static void show(const char* name, ttpu_tensor t) {
  float v[16];
  int64_t n = t.ndim == 0 ? 1 : t.sizes[0];
  ttpu_status s = ttpu_to_host(&t, v, 4 * n, err, sizeof err);
  printf("%s status=%d", name, s);
  if (s != TTPU_OK) {
    printf(" %s\n", err);
    return;
  }
  for (int64_t i = 0; i < n; i++) printf(" %g", v[i]);
  printf("\n");
}

/* binary runs op(a, b, alpha=1) on two tensors and returns its fresh result (data 0 on error). */
static ttpu_out binary(const char* name, const char* op, ttpu_tensor a, ttpu_tensor b) {
  ttpu_arg args[3];
  memset(args, 0, sizeof args);
  args[0].kind = TTPU_ARG_TENSOR;
  args[0].tensors = &a;
  args[1].kind = TTPU_ARG_TENSOR;
  args[1].tensors = &b;
  args[2].kind = TTPU_ARG_SCALAR_INT;
  args[2].i = 1;
  int nargs = strncmp(op, "aten::add", 9) == 0 ? 3 : 2;
  ttpu_out outs[4];
  memset(outs, 0, sizeof outs);
  int32_t nouts = -1;
  ttpu_status s = ttpu_op(op, args, nargs, 0, NULL, 0, outs, 4, &nouts, err, sizeof err);
  if (s != TTPU_OK) {
    printf("%s status=%d nouts=%d %s\n", name, s, nouts, err);
    memset(outs, 0, sizeof outs);
    return outs[0];
  }
  printf("%s status=%d nouts=%d dtype=%d ndim=%d size0=%lld nbytes=%lld\n", name, s, nouts, outs[0].dtype,
         outs[0].ndim, (long long)outs[0].sizes[0], (long long)outs[0].nbytes);
  return outs[0];
}

static void leaks(void) {
  ttpu_status s = ttpu_synchronize(err, sizeof err);
  printf("leaks status=%d live=%lld bytes=%lld\n", s, (long long)ttpu_live_storages(),
         (long long)ttpu_memory_allocated());
}

static int init(const char* plugin) {
  ttpu_status s = ttpu_init(plugin, 0, err, sizeof err);
  printf("init status=%d devices=%d%s%s\n", s, ttpu_device_count(), s ? " " : "", s ? err : "");
  return s == TTPU_OK;
}

static const float A[4] = {1, 2, 3, 4}, B[4] = {10, 20, 30, 40};

/* values: results, views, in-place ops and fused mode, then every storage freed. */
static void values(void) {
  uint64_t a = upload("a", A, 4), b = upload("b", B, 4);
  show("a", vec(a, 4));
  ttpu_out sum = binary("add", "aten::add.Tensor", vec(a, 4), vec(b, 4));
  show("sum", vec(sum.data, 4));

  ttpu_tensor mid = vec(b, 2); /* b[1:3] */
  mid.offset = 1;
  show("view", mid);

  ttpu_tensor every_other = vec(a, 2); /* a[::2] */
  static const int64_t two = 2;
  every_other.strides = &two;
  show("strided", every_other);

  binary("add_", "aten::add_.Tensor", vec(a, 4), vec(b, 4)); /* in place: writes a, returns nothing */
  show("a_after_add_", vec(a, 4));

  ttpu_status s = ttpu_set_mode("fused", err, sizeof err);
  char mode[16];
  ttpu_get_mode(mode, sizeof mode);
  printf("mode status=%d %s\n", s, mode);
  ttpu_out prod = binary("mul", "aten::mul.Tensor", vec(a, 4), vec(b, 4));
  ttpu_out twice = binary("mul2", "aten::mul.Tensor", vec(prod.data, 4), vec(b, 4));
  show("fused", vec(twice.data, 4));

  ttpu_free(a);
  ttpu_free(b);
  ttpu_free(sum.data);
  ttpu_free(prod.data);
  ttpu_free(twice.data);
  leaks();
}

/* errors: bad calls fail with a message, leave every tensor as it was and the library usable. */
static void errors(void) {
  uint64_t a = upload("a", A, 4), b = upload("b", B, 3);
  binary("mismatch", "aten::add.Tensor", vec(a, 4), vec(b, 3));
  binary("in_place_mismatch", "aten::add_.Tensor", vec(a, 4), vec(b, 3));
  show("a_unchanged", vec(a, 4));

  ttpu_out none[1];
  int32_t nouts = -1;
  ttpu_status s = ttpu_op("aten::definitely_not_an_op", NULL, 0, 0, NULL, 0, none, 1, &nouts, err, sizeof err);
  printf("no_rule status=%d has_rule=%d\n", s, ttpu_has_rule("aten::definitely_not_an_op"));
  printf("has_rule_add %d\n", ttpu_has_rule("aten::add.Tensor"));
  printf("has_rule_dropout %d\n", ttpu_has_rule("aten::native_dropout"));

  /* Two arguments promised, none given: a Go panic, which must come back as an error. */
  s = ttpu_op("aten::add.Tensor", NULL, 2, 0, NULL, 0, none, 1, &nouts, err, sizeof err);
  printf("null_args status=%d %s\n", s, err);

  /* Tensor arguments without their tensors: an error as well, not a crash. */
  ttpu_arg bare[2];
  memset(bare, 0, sizeof bare);
  bare[0].kind = bare[1].kind = TTPU_ARG_TENSOR;
  s = ttpu_op("aten::add.Tensor", bare, 2, 0, NULL, 0, none, 1, &nouts, err, sizeof err);
  printf("null_tensors status=%d %s\n", s, err);

  float small[2];
  ttpu_tensor t = vec(a, 4);
  s = ttpu_to_host(&t, small, sizeof small, err, sizeof err);
  printf("short_read status=%d %s\n", s, err);

  ttpu_tensor gone = vec(0x7ff0000000ull, 4);
  s = ttpu_from_host(&gone, A, sizeof A, err, sizeof err);
  printf("unknown_storage status=%d %s\n", s, err);

  s = ttpu_set_mode("fastest", err, sizeof err);
  printf("bad_mode status=%d %s\n", s, err);

  ttpu_out sum = binary("after", "aten::add.Tensor", vec(a, 4), vec(a, 4));
  show("after_values", vec(sum.data, 4));
  ttpu_free(a);
  ttpu_free(b);
  ttpu_free(sum.data);
  ttpu_free(0x7ff0000000ull); /* unknown: ignored */
  leaks();
}

/* truncate: a message longer than the caller's buffer is cut and NUL-terminated inside it. */
static void truncate_message(void) {
  char buf[8 + 4];
  memset(buf, '#', sizeof buf);
  ttpu_status s = ttpu_set_mode("fastest", buf, 8);
  printf("truncate status=%d len=%zu text=%s guard=%.4s\n", s, strlen(buf), buf, buf + 8);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: driver CASE PLUGIN_PATH\n");
    return 2;
  }
  const char* c = argv[1];
  if (strcmp(c, "bad-plugin") == 0) {
    init("/nonexistent/xla_plugin.so");
    uint64_t addr = 0;
    ttpu_status s = ttpu_alloc(16, 0, &addr, err, sizeof err);
    printf("alloc_after status=%d %s\n", s, err);
    return 0;
  }
  if (!init(argv[2])) return 0;
  if (strcmp(c, "values") == 0) values();
  else if (strcmp(c, "errors") == 0) errors();
  else if (strcmp(c, "truncate") == 0) truncate_message();
  else if (strcmp(c, "oom") == 0) {
    uint64_t a = upload("small", A, 4);
    float big[1024] = {0};
    ttpu_free(upload("big", big, 1024));
    show("small_after", vec(a, 4));
    ttpu_free(a);
    leaks();
  } else {
    fprintf(stderr, "unknown case %s\n", c);
    return 2;
  }
  return 0;
}
